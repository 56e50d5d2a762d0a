package org.ddp4j.internal;

/**
 * JNI declarations for elementwise ops and reductions (native/src/jni/elementwise_natives.cpp).
 * Arguments and results are tensor handles; shape mismatches throw IllegalArgumentException.
 * Natives that create tensors take the thread's {@link NativeResults#buffer()} as {@code results}
 * and fill one slot per output with its handle and metadata (one crossing per op); single-output
 * ones also return the handle.
 */
public final class ElementwiseNatives {
    static {
        NativeLibrary.load();
    }

    private ElementwiseNatives() {}

    /** a + alpha * b. */
    public static native long add(long a, long b, float alpha, long[] results);

    /** a += alpha * b in place. */
    public static native void addInPlace(long a, long b, float alpha);

    public static native long mul(long a, long b, long[] results);

    public static native long scale(long a, float s, long[] results);

    public static native void scaleInPlace(long a, float s);

    /** Sum of all elements, shape []. */
    public static native long sum(long a, long[] results);

    /** Row-wise argmax of a [N, C] float32 tensor, int64 [N]. */
    public static native long argmaxRows(long x, long[] results);
}
