"""torch.distributed NCCL all_reduce bandwidth on GPU tensors: the counterpart of ddp4j's
org.ddp4j.benchmarks.GpuAllReduceBench, for scripts/gpu-check.sh, measured as nccl-tests'
all_reduce_perf does: float32 SUM in place, every power of two from MIN to MAX bytes (default 8 B
to 256 MiB), 5 warm-up calls, then iters calls queued back to back and timed to the end of the
last (torch.cuda.synchronize). Columns: size (bytes), count, time_us per call, algbw = size /
time, busbw = algbw * 2(n-1)/n (GB/s); at one rank busbw is 0 by definition, compare algbw.
Run with the env:// variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; LOCAL_RANK picks the
GPU): RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 python3 scripts/gpu/torch_allreduce.py [MIN [MAX]]
Exits 77 when torch sees no GPU."""
import inspect, os, sys, time
import torch, torch.distributed as dist

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0)
lo = int(sys.argv[1]) if len(sys.argv) > 1 else 8
hi = int(sys.argv[2]) if len(sys.argv) > 2 else 256 << 20
if not torch.cuda.is_available():
    print('torch_allreduce.py: torch sees no GPU (torch %s, built for CUDA %s)' % (torch.__version__, torch.version.cuda))
    sys.exit(77)
dev = torch.device('cuda', int(os.environ.get('LOCAL_RANK', '0')))
torch.cuda.set_device(dev)
if 'device_id' in inspect.signature(dist.init_process_group).parameters:  # torch >= 2.3: bind the GPU now
    dist.init_process_group('nccl', device_id=dev)
else:
    dist.init_process_group('nccl')
r, n = dist.get_rank(), dist.get_world_size()
if r == 0:
    print('# nccl all-reduce, float32 sum, in place, %d rank(s), rank 0 on %s %s, torch %s, nccl %s'
          % (n, dev, torch.cuda.get_device_name(dev), torch.__version__, '.'.join(map(str, torch.cuda.nccl.version()))))
    print('%12s %12s %10s %11s %11s' % ('size', 'count', 'time_us', 'algbw_GB/s', 'busbw_GB/s'), flush=True)
size = 4
while size < lo:
    size *= 2
while size <= hi:
    count = size // 4
    iters = max(20, min(200, (1 << 30) // size))
    t = torch.ones(count, dtype=torch.float32, device=dev)
    for _ in range(5):
        dist.all_reduce(t)
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    torch.cuda.synchronize(dev)
    dt = (time.perf_counter() - t0) / iters
    algbw = size / dt / 1e9
    if r == 0:
        print('%12d %12d %10.1f %11.3f %11.3f' % (size, count, dt * 1e6, algbw, algbw * 2 * (n - 1) / n), flush=True)
    del t
    size *= 2
dist.destroy_process_group()
