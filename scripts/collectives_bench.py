"""PyTorch (Gloo) side of scripts/collectives-bench.sh: reduce, reduce-scatter and a send/recv ring,
timed as benchmarks/pytorch/allreduce_bench.py times all_reduce (float32 ones; 3 warm-up
calls, a barrier, then the mean over max(5, min(200, 64 MiB / size)) calls).

Sizes and bus factors follow nccl-tests: reduce and sendrecv count the tensor and busbw = algbw;
reducescatter counts each rank's input (n x the output) and busbw = algbw x (n-1)/n.

Launch N ranks with the env:// variables (benchmarks/pytorch/run.sh, or torchrun --nproc-per-node N):
  MASTER_PORT=29533 benchmarks/pytorch/run.sh 2 scripts/collectives_bench.py \
      --ops reduce,reducescatter,sendrecv --sizes 8,1K,64K,1M,32M
Rank 0 prints, per op and size, one line:
  result op=reduce impl=dist.reduce ranks=2 bytes=8 time_us=41.2 algbw=0.000194 busbw=0.000194
(time in µs per call, bandwidths in GB/s = 10^9 B/s). When this torch's Gloo has no reduce-scatter
(torch 1.13 has neither reduce_scatter_tensor nor reduce_scatter on Gloo), reducescatter is timed
as what a Gloo user writes instead, an all_reduce of a copy of the input and a copy of this rank's
chunk, and impl= says so. Rank 0 first prints a line `# torch VERSION ...`.
"""
import argparse
import time

import torch
import torch.distributed as dist

OPS = ("reduce", "reducescatter", "sendrecv")


def parse_size(text):
    """'65536', '64K', '1M' or '2G' (binary units) in bytes."""
    s = text.strip().upper()
    shift = {"K": 10, "M": 20, "G": 30}.get(s[-1:], 0)
    digits = s[:-1] if shift else s
    if not digits.isdigit() or int(digits) < 1:
        raise SystemExit(f"collectives_bench.py: --sizes: '{text}' is not a message size; give bytes (65536) or a whole"
                         " number with K, M or G (64K)")
    return int(digits) << shift


def reduce_call(size, rank, world):
    t = torch.ones(max(1, size // 4))
    return lambda: dist.reduce(t, dst=0), t.numel() * 4, 1.0, "dist.reduce"


def reduce_scatter_call(size, rank, world):
    per_rank = max(1, size // 4 // world)
    inp, out = torch.ones(per_rank * world), torch.zeros(per_rank)
    factor = (world - 1) / world
    candidates = [
        ("dist.reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(out, inp)),
        ("dist.reduce_scatter", lambda: dist.reduce_scatter(out, list(inp.chunk(world)))),
    ]
    for impl, call in candidates:
        try:
            call()
            return call, inp.numel() * 4, factor, impl
        except RuntimeError as e:
            if "does not support" not in str(e):
                raise

    def all_reduce_then_chunk():
        full = inp.clone()
        dist.all_reduce(full)
        out.copy_(full[rank * per_rank:(rank + 1) * per_rank])

    return all_reduce_then_chunk, inp.numel() * 4, factor, "all_reduce+chunk(gloo_has_no_reduce_scatter)"


def send_recv_call(size, rank, world):
    out, inc = torch.ones(max(1, size // 4)), torch.zeros(max(1, size // 4))

    def ring():
        send = dist.isend(out, (rank + 1) % world)
        recv = dist.irecv(inc, (rank - 1) % world)
        send.wait()
        recv.wait()

    return ring, out.numel() * 4, 1.0, "dist.isend+dist.irecv"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ops", default=",".join(OPS), help="comma-separated, of " + ", ".join(OPS))
    p.add_argument("--sizes", default="8,1K,64K,1M,32M", help="bytes per message (K, M, G binary), comma-separated")
    args = p.parse_args()
    ops = [o.strip().lower() for o in args.ops.split(",") if o.strip()]
    for o in ops:
        if o not in OPS:
            raise SystemExit(f"collectives_bench.py: unknown op '{o}': " + ", ".join(OPS))
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if "sendrecv" in ops and world < 2:
        raise SystemExit("collectives_bench.py: sendrecv needs at least 2 ranks (each sends to rank + 1); start 2 or more")
    if rank == 0:
        print(f"# torch {torch.__version__} backend gloo ranks {world}", flush=True)
    build = {"reduce": reduce_call, "reducescatter": reduce_scatter_call, "sendrecv": send_recv_call}
    for op in ops:
        for size in sizes:
            call, nbytes, factor, impl = build[op](size, rank, world)
            # allreduce_bench.py's batch: many calls for small messages, at least 5 for large ones
            iters = max(5, min(200, (1 << 26) // nbytes))
            for _ in range(3):
                call()
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                call()
            dt = (time.perf_counter() - t0) / iters
            if rank == 0:
                algbw = nbytes / dt / 1e9
                print(f"result op={op} impl={impl} ranks={world} bytes={nbytes} time_us={dt * 1e6:.2f}"
                      f" algbw={algbw:.6f} busbw={algbw * factor:.6f} iters={iters}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
