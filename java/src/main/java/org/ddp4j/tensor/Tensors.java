package org.ddp4j.tensor;

import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.ddp4j.internal.TensorNatives;

/** Static helpers: memory scopes, grad mode, native memory counters. */
public final class Tensors {
    private static final ThreadLocal<boolean[]> GRAD_ENABLED = ThreadLocal.withInitial(() -> new boolean[] {true});

    private Tensors() {}

    /**
     * The bytes the tensors among {@code tensors} that live in host memory hold (numel × dtype
     * size; tensors on a GPU count 0): what a memory plan of the host adds up.
     */
    public static long hostBytes(Collection<Tensor> tensors) {
        long total = 0;
        for (Tensor t : tensors) {
            if (!t.device().isCuda()) {
                total += t.numel() * t.dtype().bytes();
            }
        }
        return total;
    }

    /**
     * Opens a scope that frees every tensor created on this thread until it closes:
     * {@code try (var scope = Tensors.scope()) { ...one training step... }}.
     */
    public static TensorScope scope() {
        return new TensorScope();
    }

    /**
     * Hands t, made on another thread outside any scope (e.g. by a {@link org.ddp4j.data.DataLoader}
     * worker), to this thread's current scope, which then frees it; without an open scope t stays
     * the caller's to close. Returns t.
     */
    public static Tensor adopt(Tensor t) {
        TensorScope scope = TensorScope.current();
        if (scope != null && t.scope == null) {
            scope.register(t);
        }
        return t;
    }

    /**
     * A {@link DType#BOOL} CPU tensor holding {@code data} (copied) in row-major order, e.g. an
     * attention mask. Mirrors {@code torch.tensor(data, dtype=torch.bool)}.
     *
     * @throws IllegalArgumentException if data.length differs from the product of shape
     */
    public static Tensor ofBooleans(boolean[] data, long... shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        if (n != data.length) {
            throw new IllegalArgumentException(data.length + " values cannot fill shape " + java.util.Arrays.toString(shape)
                    + " (" + n + " elements)");
        }
        return Tensor.fromNativeResult(TensorNatives.fromBooleans(data, shape, org.ddp4j.internal.NativeResults.buffer()));
    }

    /** 0, 1, ..., end - 1 as an int64 CPU tensor [end]. Mirrors {@code torch.arange(end)}. */
    public static Tensor arange(long end) {
        return arange(0, end, 1);
    }

    /**
     * start, start + step, ... up to but excluding end, as an int64 CPU tensor of
     * ceil((end - start) / step) elements (0 when the range is empty). Mirrors
     * {@code torch.arange(start, end, step)}.
     *
     * @throws IllegalArgumentException if step is 0, or its sign points away from end
     */
    public static Tensor arange(long start, long end, long step) {
        if (step == 0 || (step > 0 && end < start) || (step < 0 && end > start)) {
            throw new IllegalArgumentException("arange: step " + step + " cannot go from " + start + " to " + end
                    + " (step must be non-zero and point towards end)");
        }
        long n = step > 0 ? (end - start + step - 1) / step : (start - end - step - 1) / -step;
        long[] values = new long[Math.toIntExact(n)];
        for (int i = 0; i < values.length; i++) {
            values[i] = start + i * step;
        }
        return Tensor.ofLongs(values, n);
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
     * Copies {@code sources}, in order, into consecutive elements of {@code flat} in one native
     * call: source i lands at the offset of the element counts before it. Mirrors torch's
     * {@code _flatten_dense_tensors} (which allocates the flat tensor; this fills a given one, as DDP
     * does with its broadcast buffer). Works on CPU and CUDA tensors; no autograd.
     *
     * @param sources tensors of flat's dtype and device, any shapes
     * @param flat the destination; its element count must equal the sources' total
     * @throws IllegalArgumentException if a source's dtype or device differs from flat's, or the
     *     element counts do not add up to flat's (the message names the tensors)
     * @throws IllegalStateException if a tensor is closed
     */
    public static void flattenInto(List<Tensor> sources, Tensor flat) {
        TensorNatives.flattenInto(handles(sources),
                Objects.requireNonNull(flat, "flattenInto: flat is null").nativeHandle());
    }

    /**
     * Copies consecutive slices of {@code flat} into {@code destinations}, in order, in one native
     * call: the inverse of {@link #flattenInto}. Mirrors torch's {@code _unflatten_dense_tensors}
     * followed by {@code copy_} into each tensor. Works on CPU and CUDA tensors; no autograd.
     *
     * @param flat the source; its element count must equal the destinations' total
     * @param destinations tensors of flat's dtype and device, any shapes, overwritten in place
     * @throws IllegalArgumentException if a destination's dtype or device differs from flat's, or
     *     the element counts do not add up to flat's (the message names the tensors)
     * @throws IllegalStateException if a tensor is closed
     */
    public static void unflattenFrom(Tensor flat, List<Tensor> destinations) {
        TensorNatives.unflattenFrom(Objects.requireNonNull(flat, "unflattenFrom: flat is null").nativeHandle(),
                handles(destinations));
    }

    private static long[] handles(List<Tensor> tensors) {
        long[] handles = new long[tensors.size()];
        for (int i = 0; i < handles.length; i++) {
            handles[i] = Objects.requireNonNull(tensors.get(i), "tensor " + i + " is null").nativeHandle();
        }
        return handles;
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
