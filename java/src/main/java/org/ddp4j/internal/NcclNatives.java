package org.ddp4j.internal;

/**
 * JNI declarations for the NCCL process group (native/src/jni/cuda/nccl_natives.cpp, in
 * libddp4j_cuda.so). Call {@link org.ddp4j.cuda.Cuda#ensureLoaded()} before any of these: this
 * class does not load the CUDA library itself.
 *
 * <p>NCCL is opened on first use (dlopen of {@code DDP4J_NCCL_LIBRARY}, else
 * {@code libnccl.so.2}); without it, or with an NCCL older than 2.14, the calls throw
 * {@link IllegalStateException} saying where NCCL comes from. A group handle points to a native
 * {@code NcclProcessGroup}; a work handle to a native {@code NcclWork} (free each exactly once:
 * {@link #destroy}, {@link #workFree}). Tensor handles are
 * {@link org.ddp4j.tensor.Tensor#nativeHandle()}. Collective errors arrive as
 * {@code DistributedException} / {@code DistributedTimeoutException}, argument errors as
 * {@link IllegalArgumentException}.
 */
public final class NcclNatives {
    private NcclNatives() {}

    /** Loads NCCL if needed and returns its version code (e.g. 22805 for 2.28.5). */
    public static native int version();

    /** The path NCCL was opened from (what was passed to dlopen). */
    public static native String libraryPath();

    /** A new communicator id (ncclGetUniqueId): 128 bytes that rank 0 passes to every rank. */
    public static native byte[] uniqueId();

    /** The PCI bus id of a CUDA device, e.g. "0000:3b:00.0". */
    public static native String pciBusId(int device);

    /**
     * Joins the communicator {@code uniqueId} as {@code rank} of {@code size} on CUDA device
     * {@code device}; blocks until all ranks joined or {@code timeoutMs} passes. Returns the group handle.
     */
    public static native long create(byte[] uniqueId, int rank, int size, int device, long timeoutMs);

    /** Queues an in-place all-reduce; {@code op} is a ReduceOp ordinal. Returns a work handle. */
    public static native long allReduce(long group, long tensor, int op);

    /** Queues a broadcast from rank {@code root}. Returns a work handle. */
    public static native long broadcast(long group, long tensor, int root);

    /** Queues an all-gather into the flat {@code output} (world size x input elements). */
    public static native long allGather(long group, long output, long input);

    /** Queues an all-gather into one output tensor per rank. */
    public static native long allGatherList(long group, long[] outputs, long input);

    /** Queues a barrier (a one-element all-reduce). */
    public static native long barrier(long group);

    /**
     * Orders the device's compute stream after the work (the host does not block; a barrier
     * blocks). Throws the work's error if it has already failed.
     */
    public static native void workSynchronize(long work);

    /**
     * Blocks until the work has finished on the GPU and throws its error; {@code timeoutMs <= 0}
     * waits without a limit of its own. Throws DistributedTimeoutException if it is still running
     * after {@code timeoutMs}.
     */
    public static native void workWait(long work, long timeoutMs);

    /** Whether the work has finished (successfully or not). Never blocks. */
    public static native boolean workIsCompleted(long work);

    /** "NCCL allReduce(SUM) of 10 float32 elements (40 bytes) on rank 0 of 2 on cuda:0" and the like. */
    public static native String workDescription(long work);

    /** Releases the work handle (the collective and its tensors are unaffected). */
    public static native void workFree(long work);

    /** Waits for pending collectives (at most the timeout), destroys or aborts the communicator, frees the group. */
    public static native void destroy(long group);
}
