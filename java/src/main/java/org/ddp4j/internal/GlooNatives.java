package org.ddp4j.internal;

import org.ddp4j.distributed.store.Store;

/**
 * JNI declarations for the Gloo process group (native/src/jni/gloo_natives.cpp).
 *
 * <p>A group handle points to a native {@code GlooProcessGroup}; a work handle to a native
 * {@code Work} (each must be freed exactly once: {@link #destroy}, {@link #workFree}). Tensor
 * handles are {@link org.ddp4j.tensor.Tensor#nativeHandle()}. Errors arrive as
 * {@code DistributedException} / {@code DistributedTimeoutException} (collectives, rendezvous),
 * {@code IllegalArgumentException} (bad arguments) or {@code IllegalStateException} (closed group),
 * with the native message.
 */
public final class GlooNatives {
    static {
        NativeLibrary.load();
    }

    private GlooNatives() {}

    /**
     * Rendezvous through {@code store} and connect to every other rank; blocks until all
     * {@code size} ranks have joined or {@code timeoutMs} passes.
     *
     * @param hostname the address this rank binds and advertises; empty lets Gloo use
     *     GLOO_SOCKET_IFNAME or this host's name
     * @return the group handle
     */
    public static native long create(Store store, int rank, int size, long timeoutMs, String hostname);

    /** Queues an in-place all-reduce of the tensor; {@code op} is a ReduceOp ordinal. Returns a work handle. */
    public static native long allReduce(long group, long tensor, int op);

    /**
     * An all-reduce without the per-collective header check (for callers that verified their
     * collectives agree across ranks). With {@code runInline} and an idle group it runs on the
     * calling thread. Returns 0 when the collective has already finished successfully (throws if it
     * failed), else a work handle.
     */
    public static native long allReduceUnchecked(long group, long tensor, int op, boolean runInline);

    /** Queues a broadcast of the tensor from rank {@code root}. Returns a work handle. */
    public static native long broadcast(long group, long tensor, int root);

    /** Queues an all-gather of {@code input} into the flat {@code output} (world size x input elements). */
    public static native long allGather(long group, long output, long input);

    /** Queues an all-gather of {@code input} into one output tensor per rank. */
    public static native long allGatherList(long group, long[] outputs, long input);

    /** Queues a barrier. Returns a work handle. */
    public static native long barrier(long group);

    /**
     * Blocks until the work finishes and throws its error; {@code timeoutMs <= 0} waits without limit.
     * Throws DistributedTimeoutException if the work is still running after {@code timeoutMs}.
     */
    public static native void workWait(long work, long timeoutMs);

    /** Whether the work has finished (successfully or not). */
    public static native boolean workIsCompleted(long work);

    /** "allReduce(SUM) of 10 float32 elements" and the like. */
    public static native String workDescription(long work);

    /** Releases the work handle (the collective itself is unaffected). */
    public static native void workFree(long work);

    /** Fails queued collectives, waits for the running one, closes the connections, frees the group. */
    public static native void destroy(long group);
}
