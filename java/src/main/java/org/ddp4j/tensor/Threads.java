package org.ddp4j.tensor;

import org.ddp4j.internal.ParallelNatives;

/**
 * The intra-op threads: how many threads one CPU op may use, the calling thread included.
 * Matrix products, convolutions, batch norm, pooling, element-wise ops, losses and optimizer
 * steps split their work among them; GPU ops are not affected. Mirrors
 * {@code torch.set_num_threads} / {@code torch.get_num_threads}.
 *
 * <p>The default, fixed on first use: {@code OMP_NUM_THREADS} when it is set to a positive
 * integer (the first entry of a list such as {@code 4,2}), as in PyTorch; otherwise the CPUs this
 * process may run on ({@code sched_getaffinity}, so {@code taskset} and cgroup cpusets count)
 * divided by {@code LOCAL_WORLD_SIZE} (set by {@code ddp4j-run} and {@code Spawn}; 1 when unset),
 * at least 1. So one rank takes the machine and two ranks on one host take half each. A
 * malformed {@code OMP_NUM_THREADS} is ignored with a warning on stderr naming it, as PyTorch does.
 *
 * <p>Results do not depend on the count: each output element is computed by one thread in a
 * fixed order, and sums go through fixed blocks, so a model trains to the same bits with 1, 2 or
 * 16 threads. The setting is process-wide. An op running on another thread when the count
 * changes finishes first; ops started from several threads at once run one at a time on the
 * pool, the others on their own thread alone. ddp4j's GEMMs call OpenBLAS single-threaded (it is
 * set to one thread when the library loads), so {@code OPENBLAS_NUM_THREADS} changes nothing.
 */
public final class Threads {
    private Threads() {}

    /**
     * The number of intra-op threads, at least 1. Mirrors {@code torch.get_num_threads()}.
     */
    public static int getNumThreads() {
        return ParallelNatives.getNumThreads();
    }

    /**
     * Sets the number of intra-op threads for the ops that follow. Mirrors
     * {@code torch.set_num_threads(n)}.
     *
     * @param n threads per op, the calling thread included; at least 1 (more than the machine's
     *     CPUs is allowed and only slows ops down)
     * @throws IllegalArgumentException if {@code n < 1}
     */
    public static void setNumThreads(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("setNumThreads: the number of threads must be at least 1, got " + n);
        }
        ParallelNatives.setNumThreads(n);
    }
}
