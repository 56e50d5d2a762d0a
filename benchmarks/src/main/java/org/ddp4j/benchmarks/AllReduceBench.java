package org.ddp4j.benchmarks;

import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.Tensor;

/**
 * All-reduce latency and bandwidth over the default Gloo group, in the columns of nccl-tests and
 * of the PyTorch anchor ({@code ../shared/anchors/pytorch/allreduce_bench.py}), which it mirrors:
 * same sizes (8 B to 64 MiB), same iteration counts, float32 ones, SUM, each timed loop starting
 * after a barrier. algbw = bytes / time; busbw = algbw x 2(n-1)/n (what each link carries in a
 * ring all-reduce, so busbw is comparable across world sizes).
 *
 * <p>A plain main rather than JMH: JMH's timed modes run unequal numbers of calls per rank, which
 * deadlocks a collective. Every rank runs the same fixed counts. Run with the launcher:
 * {@code scripts/ddp4j-run --nproc-per-node 2 java -cp benchmarks/target/benchmarks.jar
 * org.ddp4j.benchmarks.AllReduceBench [minBytes [maxBytes]]}; rank 0 prints the table.
 */
public final class AllReduceBench {
    private AllReduceBench() {}

    public static void main(String[] args) {
        ProcessGroup group = Distributed.initProcessGroup("gloo");
        int rank = group.rank();
        int n = group.size();
        if (rank == 0) {
            System.out.printf("%12s %10s %10s %10s%n", "bytes", "time_us", "algbw_GB/s", "busbw_GB/s");
        }
        long minBytes = args.length > 0 ? Long.parseLong(args[0]) : 0;
        long maxBytes = args.length > 1 ? Long.parseLong(args[1]) : Long.MAX_VALUE;
        int[] exponents = {3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 26};
        for (int e : exponents) {
            if ((1L << e) < minBytes || (1L << e) > maxBytes) {
                continue;
            }
            long count = Math.max(1, (1L << e) / 4);
            int iters = (int) Math.max(5, Math.min(200, (1L << 26) / (count * 4)));
            try (Tensor t = Tensor.ones(count)) {
                for (int i = 0; i < 3; i++) {
                    group.allReduce(t).await();
                }
                group.barrier().await();
                long t0 = System.nanoTime();
                for (int i = 0; i < iters; i++) {
                    group.allReduce(t).await();
                }
                double dt = (System.nanoTime() - t0) / 1e9 / iters;
                double size = count * 4.0;
                if (rank == 0) {
                    System.out.printf("%12d %10.1f %10.3f %10.3f%n", (long) size, dt * 1e6, size / dt / 1e9,
                            size / dt / 1e9 * 2 * (n - 1) / n);
                }
            }
        }
        Distributed.destroyProcessGroup();
    }
}
