package org.ddp4j.internal;

/**
 * The per-thread buffer through which natives that create tensors return, in the same crossing,
 * each new tensor's handle and metadata (native/src/jni/jni_util.h, {@code result_of}): output i
 * fills slot i, {@link #SLOT} longs {handle, dtype ordinal, device type ordinal, device index, ndim,
 * sizes...}. A tensor of more than {@link #MAX_DIMS} dimensions leaves its sizes out, and
 * {@link org.ddp4j.tensor.Tensor} asks {@link TensorNatives#meta} for them. Read a slot before the
 * thread's next native call, which may overwrite it.
 */
public final class NativeResults {
    /** Longs per output slot. */
    public static final int SLOT = 16;
    /** Longs before the sizes in a slot. */
    public static final int HEADER = 5;
    /** Sizes a slot holds. */
    public static final int MAX_DIMS = SLOT - HEADER;
    /** Slots in the buffer: the most outputs an op returns. */
    public static final int MAX_OUTPUTS = 4;

    private static final ThreadLocal<long[]> BUFFER = ThreadLocal.withInitial(() -> new long[MAX_OUTPUTS * SLOT]);

    private NativeResults() {}

    /** The calling thread's buffer, to pass to a native as its {@code results} argument. */
    public static long[] buffer() {
        return BUFFER.get();
    }
}
