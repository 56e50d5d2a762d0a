package org.ddp4j.internal;

/**
 * JNI declarations for elementwise ops and reductions (native/src/jni/elementwise_natives.cpp).
 * Arguments and results are tensor handles; shape mismatches throw IllegalArgumentException.
 */
public final class ElementwiseNatives {
    static {
        NativeLibrary.load();
    }

    private ElementwiseNatives() {}

    /** a + alpha * b. */
    public static native long add(long a, long b, float alpha);

    /** a += alpha * b in place. */
    public static native void addInPlace(long a, long b, float alpha);

    public static native long mul(long a, long b);

    public static native long scale(long a, float s);

    public static native void scaleInPlace(long a, float s);

    /** Sum of all elements, shape []. */
    public static native long sum(long a);

    /** Row-wise argmax of a [N, C] float32 tensor, int64 [N]. */
    public static native long argmaxRows(long x);
}
