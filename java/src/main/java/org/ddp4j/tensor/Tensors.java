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

    /** Bytes of native CPU memory held by live tensors (for leak checks). */
    public static long nativeBytesInUse() {
        return TensorNatives.bytesInUse(Device.Type.CPU.ordinal());
    }

    /** Native CPU allocations made since the library loaded (to count allocations per step). */
    public static long nativeAllocationCount() {
        return TensorNatives.allocationCount(Device.Type.CPU.ordinal());
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
