package org.ddp4j.distributed;

import java.time.Duration;
import java.util.Objects;
import org.ddp4j.distributed.store.Store;

/**
 * What the Gloo and NCCL groups share: the checked rank, size and timeout, the native group
 * handle (0 once closed), and closing it together with the stores {@link Distributed} opened for
 * the group. Methods that use the handle are synchronized on the group.
 */
abstract class NativeProcessGroup extends ProcessGroup {
    private final int rank;
    private final int size;
    private final Duration timeout;
    private final AutoCloseable resources;
    private long handle;

    /**
     * Checks the arguments every backend takes; the subclass then creates its native group and
     * passes it to {@link #setHandle}.
     *
     * @throws IllegalArgumentException for a size below 1, a rank outside {@code [0, size)} or a non-positive timeout
     */
    NativeProcessGroup(Store store, int rank, int size, Duration timeout, AutoCloseable resources) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(timeout, "timeout");
        if (size < 1) {
            throw new IllegalArgumentException("world size must be at least 1, got " + size);
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank must be in [0, " + size + "), got " + rank);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        this.rank = rank;
        this.size = size;
        this.timeout = timeout;
        this.resources = resources;
    }

    /** The native group, created by the subclass's constructor. */
    final void setHandle(long handle) {
        this.handle = handle;
    }

    /** Frees the native group (the backend's destroy). */
    abstract void destroy(long handle);

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    /** The rendezvous and per-collective timeout. */
    public Duration timeout() {
        return timeout;
    }

    /** Whether {@link #close()} has been called. */
    public synchronized boolean isClosed() {
        return handle == 0;
    }

    /** The native group for {@code op}; throws IllegalStateException naming the op once closed. */
    final synchronized long handle(String op) {
        if (handle == 0) {
            throw new IllegalStateException(op + ": the process group (" + backend() + ", rank " + rank + " of " + size
                    + ") is closed");
        }
        return handle;
    }

    /**
     * Destroys the native group, then closes the stores opened for it. Idempotent. Mirrors
     * {@code destroy_process_group(group)}.
     */
    @Override
    public synchronized void close() {
        if (handle == 0) {
            return;
        }
        long h = handle;
        handle = 0;
        try {
            destroy(h);
        } finally {
            if (resources != null) {
                try {
                    resources.close();
                } catch (Exception ignored) {
                    // the group is gone either way
                }
            }
        }
    }

    /** A timeout in whole milliseconds for the natives: at least 1, Long.MAX_VALUE when it overflows. */
    static long millis(Duration d) {
        try {
            return Math.max(1, d.toMillis());
        } catch (ArithmeticException overflow) {
            return Long.MAX_VALUE;
        }
    }
}
