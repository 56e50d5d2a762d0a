package org.ddp4j.internal;

/**
 * JNI declarations of the intra-op thread pool, native/include/ddp4j/parallel.h
 * (native/src/core/parallel.cpp; native/src/jni/parallel_natives.cpp; Java side
 * {@link org.ddp4j.tensor.Threads}).
 */
public final class ParallelNatives {
    static {
        NativeLibrary.load();
    }

    private ParallelNatives() {}

    /** The intra-op thread count, at least 1 (the default on first use: see parallel.h). */
    public static native int getNumThreads();

    /**
     * Sets the intra-op thread count; throws IllegalArgumentException unless {@code n >= 1}. Waits
     * for an op in flight on another thread to finish.
     */
    public static native void setNumThreads(int n);
}
