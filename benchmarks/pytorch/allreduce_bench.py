"""All-reduce bandwidth of torch.distributed on Gloo: the PyTorch column of scripts/allreduce-bench.sh.

Measures all_reduce (SUM) of a float32 tensor of ones at 8 B, 32 B, 128 B, ... 128 MiB (4x steps).
Each size: 3 warm-up calls, a barrier, then the mean time over max(5, min(200, 64 MiB / size)) calls
on rank 0's clock. Rank 0 prints nccl-tests' columns, one line per size after a header:
       bytes    time_us algbw_GB/s busbw_GB/s
with busbw = algbw x 2(n-1)/n and GB/s = 10^9 B/s, and first a line `# torch VERSION ...`.

Run (2 ranks):  benchmarks/pytorch/run.sh 2 benchmarks/pytorch/allreduce_bench.py
smoke:          benchmarks/pytorch/run.sh 2 benchmarks/pytorch/allreduce_bench.py --max-bytes 128K
"""
import argparse
import sys
import time

import torch
import torch.distributed as dist


def size_arg(text):
    """'8', '128K', '32M' (binary units) in bytes."""
    t = text.strip().upper()
    shift = {"K": 10, "M": 20, "G": 30}.get(t[-1:], 0)
    return int(t[:-1] if shift else t) << shift


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--min-bytes", type=size_arg, default=8, help="smallest size (default 8)")
    p.add_argument("--max-bytes", type=size_arg, default=128 << 20, help="largest size (default 128M)")
    a = p.parse_args()
    dist.init_process_group("gloo")  # env://
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# torch {torch.__version__} python {sys.version.split()[0]} backend gloo ranks {world}", flush=True)
        print(f"{'bytes':>12} {'time_us':>10} {'algbw_GB/s':>10} {'busbw_GB/s':>10}", flush=True)
    size = a.min_bytes
    while size <= a.max_bytes:
        count = max(1, size // 4)
        nbytes = count * 4
        t = torch.ones(count)
        calls = max(5, min(200, (64 << 20) // nbytes))
        for _ in range(3):
            dist.all_reduce(t)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(t)
        per_call = (time.perf_counter() - start) / calls
        if rank == 0:
            algbw = nbytes / per_call / 1e9
            busbw = algbw * 2 * (world - 1) / world
            print(f"{nbytes:>12} {per_call * 1e6:>10.1f} {algbw:>10.3f} {busbw:>10.3f}", flush=True)
        size *= 4
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
