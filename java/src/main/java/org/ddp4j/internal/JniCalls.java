package org.ddp4j.internal;

/**
 * How many JNI calls into libddp4j (and libddp4j_cuda) the calling thread has made: every native
 * entry point runs inside {@code guarded()} (native/src/jni/jni_util.h), which counts it in a
 * thread-local counter (native/src/jni/jni_calls.cpp). For tests and benchmarks that bound the
 * crossings of a training step; PyTorch has no counterpart (its ops do not cross JNI).
 */
public final class JniCalls {
    static {
        NativeLibrary.load();
    }

    private JniCalls() {}

    /**
     * The calling thread's crossings so far (monotonic; this call itself is not counted). Take the
     * difference of two readings on the same thread.
     */
    public static native long count();
}
