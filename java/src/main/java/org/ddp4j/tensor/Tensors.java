package org.ddp4j.tensor;

import org.ddp4j.internal.TensorNatives;

/** Static helpers: memory scopes, grad mode, native memory counters. */
public final class Tensors {
    private static final ThreadLocal<boolean[]> GRAD_ENABLED = ThreadLocal.withInitial(() -> new boolean[] {true});

    private Tensors() {}

    /**
     * Opens a scope that frees every tensor created on this thread until it closes:
     * {@code try (var scope = Tensors.scope()) { ...one training step... }}.
     */
    public static TensorScope scope() {
        return new TensorScope();
    }

    /** A scope in which ops record no autograd graph. Mirrors {@code torch.no_grad()}. */
    public static NoGradScope noGrad() {
        boolean[] flag = GRAD_ENABLED.get();
        boolean previous = flag[0];
        flag[0] = false;
        return new NoGradScope(flag, previous);
    }

    /** Whether ops on this thread record the autograd graph. Mirrors {@code torch.is_grad_enabled()}. */
    public static boolean isGradEnabled() {
        return GRAD_ENABLED.get()[0];
    }

    /**
     * Runs {@code callback} once, after the backward pass now running on this thread has
     * accumulated every gradient and before {@code backward()} returns. For gradient hooks that
     * must finish work at the end of backward (DDP awaits its all-reduces this way). Mirrors
     * {@code Variable._execution_engine.queue_callback}.
     *
     * @throws IllegalStateException if no backward pass is running on this thread
     */
    public static void queueBackwardCallback(Runnable callback) {
        Autograd.queueCallback(callback);
    }

    /**
     * Bytes of native CPU memory held by live tensors (for leak checks). Blocks kept in the
     * allocator's cache are not counted: see {@link #nativeBytesCached()}.
     */
    public static long nativeBytesInUse() {
        return TensorNatives.bytesInUse(Device.Type.CPU.ordinal());
    }

    /**
     * Bytes of native CPU memory that the caching allocator keeps for reuse: blocks freed by closed
     * tensors and not yet returned to the system. Mirrors {@code torch.cuda.memory_reserved() -
     * memory_allocated()}.
     */
    public static long nativeBytesCached() {
        return TensorNatives.bytesCached(Device.Type.CPU.ordinal());
    }

    /**
     * Real system allocations of native CPU memory since the library loaded: requests the cache
     * could not serve. A steady-state training step (same shapes each step) adds none.
     */
    public static long nativeAllocationCount() {
        return TensorNatives.allocationCount(Device.Type.CPU.ordinal());
    }

    /**
     * Returns every cached block of native CPU memory to the system; live tensors are untouched.
     * Mirrors {@code torch.cuda.empty_cache()}. Useful before a phase with different shapes (e.g.
     * evaluation after training) or before handing memory to something else.
     */
    public static void emptyCache() {
        TensorNatives.emptyCache(Device.Type.CPU.ordinal());
    }

    /**
     * The most bytes the CPU cache may hold; blocks freed beyond it go back to the system. The
     * default is {@code DDP4J_CPU_CACHE_LIMIT} (bytes, with an optional k/m/g suffix) when set,
     * else a quarter of physical memory.
     */
    public static long nativeCacheLimit() {
        return TensorNatives.cacheLimit(Device.Type.CPU.ordinal());
    }

    /**
     * Sets the CPU cache limit in bytes (0 disables caching); if the cache holds more, it is
     * emptied.
     */
    public static void setNativeCacheLimit(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("cache limit must be >= 0 bytes, got " + bytes);
        }
        TensorNatives.setCacheLimit(Device.Type.CPU.ordinal(), bytes);
    }

    /** Restores the previous grad mode when closed. */
    public static final class NoGradScope implements AutoCloseable {
        private final boolean[] flag;
        private final boolean previous;

        private NoGradScope(boolean[] flag, boolean previous) {
            this.flag = flag;
            this.previous = previous;
        }

        @Override
        public void close() {
            flag[0] = previous;
        }
    }
}
