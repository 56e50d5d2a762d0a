package org.ddp4j.internal;

/**
 * JNI declarations for the Work handles of every backend (native/src/jni/work_natives.cpp, in
 * libddp4j.so). A work handle points to a native {@code std::shared_ptr<ddp4j::Work>}: a Gloo work,
 * or an NCCL work from libddp4j_cuda.so; the native {@code Work}'s virtual functions pick the
 * backend's behaviour. Each handle must be freed exactly once ({@link #free}). Errors of the
 * collective arrive as {@code DistributedException} / {@code DistributedTimeoutException} with the
 * native message; a freed (0) handle gives {@link IllegalStateException}.
 */
public final class WorkNatives {
    static {
        NativeLibrary.load();
    }

    private WorkNatives() {}

    /**
     * Mirrors {@code Work.synchronize()}, PyTorch's {@code work.wait()} without a timeout: for Gloo
     * blocks the host until the collective finished; for NCCL orders the device's compute stream
     * after it without blocking the host (a barrier blocks). Then, in the same call, reports whether
     * the collective has finished and throws its error if it failed.
     *
     * @return whether the collective has finished (successfully: a failure throws)
     */
    public static native boolean synchronize(long work);

    /**
     * Blocks the host until the collective has finished (for NCCL: on the GPU) and throws its error;
     * {@code timeoutMs <= 0} waits without a limit of its own. Mirrors {@code Work.wait(timeout)}.
     * Returns normally only when the collective finished successfully.
     *
     * @throws RuntimeException ({@code DistributedTimeoutException}) if it is still running after
     *     {@code timeoutMs} (the wait's own timeout: the collective keeps running), or if it timed out itself
     */
    public static native void await(long work, long timeoutMs);

    /** Whether the collective has finished, successfully or not. Never blocks. Mirrors {@code Work.is_completed()}. */
    public static native boolean isCompleted(long work);

    /** "allReduce(SUM) of 10 float32 elements" and the like, for messages. */
    public static native String description(long work);

    /** Releases the work handle (the collective itself is unaffected; NCCL keeps its tensors until the GPU is past them). */
    public static native void free(long work);
}
