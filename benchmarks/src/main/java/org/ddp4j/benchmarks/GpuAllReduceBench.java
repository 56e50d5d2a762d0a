package org.ddp4j.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.Work;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;

/**
 * All-reduce bandwidth of GPU tensors through the NCCL process group, as nccl-tests'
 * all_reduce_perf measures it: float32 SUM in place, every power of two from minBytes to maxBytes
 * (default 8 B to 256 MiB), 5 warm-up calls, then {@code iters} calls queued back to back and
 * timed to the end of the last (every Work awaited, then {@link Cuda#synchronize}). Columns:
 * size (bytes), count (elements), time_us per call, algbw = size / time, busbw = algbw x 2(n-1)/n
 * (GB/s, 1e9). At one rank busbw is 0 by that definition (there is no link to carry anything), so
 * algbw is the figure to compare there. Sizes up to 1 MiB are also checked: rank r contributes r + 1
 * everywhere, every element must come back as n(n+1)/2.
 * {@code scripts/gpu/torch_allreduce.py} does the same with torch.distributed's NCCL backend.
 *
 * <p>Run on each rank with the {@code env://} variables set (RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT; the launcher sets them): {@code scripts/ddp4j-run --nproc-per-node N java -cp
 * benchmarks/target/benchmarks.jar org.ddp4j.benchmarks.GpuAllReduceBench [minBytes [maxBytes]]}.
 * Each rank uses cuda:LOCAL_RANK. Exits 77 (printing why) when no GPU can be used.
 */
public final class GpuAllReduceBench {
    private GpuAllReduceBench() {}

    public static void main(String[] args) {
        long minBytes = args.length > 0 ? Long.parseLong(args[0]) : 8;
        long maxBytes = args.length > 1 ? Long.parseLong(args[1]) : 256L << 20;
        String reason = Cuda.unavailableReason();
        if (reason != null) {
            System.out.println("GpuAllReduceBench: no GPU: " + reason);
            System.exit(77);
        }
        Device device = Cuda.localDevice(System.getenv());
        ProcessGroup group = Distributed.initProcessGroup("nccl");
        int rank = group.rank();
        int n = group.size();
        if (rank == 0) {
            System.out.printf(Locale.ROOT, "# nccl all-reduce, float32 sum, in place, %d rank(s), rank 0 on %s %s%n",
                    n, device, Cuda.deviceName(device));
            System.out.printf(Locale.ROOT, "%12s %12s %10s %11s %11s%n", "size", "count", "time_us", "algbw_GB/s", "busbw_GB/s");
        }
        boolean ok = true;
        for (long bytes = Math.max(4, Long.highestOneBit(Math.max(1, minBytes))); bytes <= maxBytes; bytes *= 2) {
            long count = bytes / 4;
            int iters = (int) Math.max(20, Math.min(200, (1L << 30) / bytes));
            try (Tensor t = Tensor.full(1, DType.FLOAT32, device, count)) {
                for (int i = 0; i < 5; i++) {
                    group.allReduce(t).await();
                }
                Cuda.synchronize(device);
                List<Work> works = new ArrayList<>(iters);
                long t0 = System.nanoTime();
                for (int i = 0; i < iters; i++) {
                    works.add(group.allReduce(t));
                }
                for (Work w : works) {
                    w.await();
                }
                Cuda.synchronize(device);
                double dt = (System.nanoTime() - t0) / 1e9 / iters;
                double algbw = bytes / dt / 1e9;
                String wrong = bytes <= (1 << 20) ? check(group, device, count) : "";
                ok &= wrong.isEmpty();
                if (rank == 0) {
                    System.out.printf(Locale.ROOT, "%12d %12d %10.1f %11.3f %11.3f%s%n", bytes, count, dt * 1e6, algbw,
                            algbw * 2 * (n - 1) / n, wrong);
                }
            }
        }
        Distributed.destroyProcessGroup();
        if (!ok) {
            System.exit(1);
        }
    }

    /** One all-reduce of rank + 1 everywhere; "" when every element is n(n+1)/2, else what went wrong. */
    private static String check(ProcessGroup group, Device device, long count) {
        int n = group.size();
        float expected = n * (n + 1) / 2f;
        try (Tensor t = Tensor.full(group.rank() + 1, DType.FLOAT32, device, count)) {
            group.allReduce(t).await();
            try (Tensor host = t.to(Device.CPU)) {
                float[] v = host.toFloatArray();
                for (int i = 0; i < v.length; i++) {
                    if (v[i] != expected) {
                        return "  WRONG: element " + i + " is " + v[i] + ", expected " + expected;
                    }
                }
            }
        }
        return "";
    }
}
