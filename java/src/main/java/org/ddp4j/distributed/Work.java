package org.ddp4j.distributed;

import java.time.Duration;

/**
 * The handle of an asynchronous collective, returned by every {@link ProcessGroup} operation.
 * Mirrors {@code torch.distributed.Work}: {@link #await()} is {@code wait()} (Java's
 * {@code Object.wait} is taken), {@link #isCompleted()} is {@code is_completed()}.
 *
 * <p>The collective's tensors may be read only after {@link #await()} returns. Collectives of
 * one group run in the order they were issued, so awaiting the last one also means the earlier
 * ones have finished (but await each to see its error). A Work needs no closing: its native handle
 * is released once its completion has been observed, or by a cleaner when it becomes unreachable.
 * Thread-safe.
 */
public abstract class Work {
    /** A collective that already finished successfully (one that ran on the caller's thread). */
    static final Work COMPLETED = new Work() {
        @Override
        public void await() {}

        @Override
        public void await(Duration timeout) {}

        @Override
        public boolean isCompleted() {
            return true;
        }

        @Override
        public String toString() {
            return "Work(done)";
        }
    };

    /** Subclassed by the backends in this package only. */
    Work() {}

    /**
     * Waits for the collective. Mirrors {@code Work.wait()}. Gloo: blocks until it has finished.
     * NCCL: as PyTorch's, orders the device's compute stream after the collective and returns
     * without blocking the host (kernels queued afterwards see the result; reading the values on
     * the host, e.g. {@code toFloatArray()}, synchronises); a barrier's await blocks the host.
     * Either way the wait is bounded by the group's timeout, which the collective itself honours.
     *
     * @throws DistributedTimeoutException if the collective timed out (the message names the op,
     *     its element count and the timeout)
     * @throws DistributedException if it failed: a peer died, or the ranks disagreed on the
     *     collective (different op, dtype or element count); thrown again on every later await
     */
    public abstract void await();

    /**
     * Blocks the calling thread until the collective has finished (for NCCL: on the GPU) or
     * {@code timeout} passes. Mirrors {@code Work.wait(timeout)}.
     *
     * @param timeout how long to wait; zero or negative waits without limit
     * @throws DistributedTimeoutException if the collective has not finished within {@code timeout}
     *     (it keeps running; await again), or if it timed out itself
     * @throws DistributedException if the collective failed, as for {@link #await()}
     */
    public abstract void await(Duration timeout);

    /**
     * Blocks the calling thread until the collective has finished, for NCCL on the GPU (the host
     * waits, unlike {@link #await()}). For Gloo the same as {@link #await()}. Bounded by the
     * group's timeout.
     *
     * @throws DistributedTimeoutException if the collective timed out (naming the op, its size and
     *     the timeout)
     * @throws DistributedException if it failed, as for {@link #await()}
     */
    public void awaitBlocking() {
        await(Duration.ZERO);
    }

    /**
     * Whether the collective has finished, successfully or not; never blocks. Mirrors
     * {@code Work.is_completed()}. Call {@link #await()} to see an error.
     */
    public abstract boolean isCompleted();
}
