package org.ddp4j.internal;

/**
 * JNI declarations for the collectives of every backend's process group
 * (native/src/jni/process_group_natives.cpp, in libddp4j.so). A group handle points to a native
 * {@code ddp4j::ProcessGroup}, created by {@link GlooNatives#create} or {@link NcclNatives#create}
 * and freed exactly once by {@link #destroy}; the collectives return work handles for
 * {@link WorkNatives}. Tensor handles are {@link org.ddp4j.tensor.Tensor#nativeHandle()}; {@code op}
 * is a {@code ReduceOp} ordinal. Mirror PyTorch's {@code ProcessGroup} methods. Argument errors
 * (device, dtype, sizes, rank) arrive as {@link IllegalArgumentException}, a closed or failed
 * group as {@link IllegalStateException} or {@code DistributedException}, with the native message.
 */
public final class ProcessGroupNatives {
    static {
        NativeLibrary.load();
    }

    private ProcessGroupNatives() {}

    // Each native is named as the ProcessGroup method it serves (allGather: the list form,
    // allGatherIntoTensor: the flat one; reduceScatter and reduceScatterTensor likewise;
    // allReduceBucket: DDP's bucket all-reduce). Every collective returns a work handle, or 0 when
    // the collective already finished successfully on the calling thread (a small shared-memory
    // op): no handle to wait on or free.

    /** Queues an in-place all-reduce of the tensor ({@code all_reduce}). Returns a work handle. */
    public static native long allReduce(long group, long tensor, int op);

    /**
     * DDP's all-reduce of its bucket {@code bucket} (0-based) of {@code buckets}, in place on the
     * bucket's flat 1-D tensor (its gradients, then DDP's "used" and "still training" flags, all in
     * the gradients' dtype and device); {@code op} is a {@code ReduceOp} ordinal (DDP passes AVG).
     * Its agreement check travels with the data instead of taking a round trip first, and its
     * messages name the bucket.
     * With {@code runInline} and an idle group a backend may run it on the calling thread. Returns 0
     * when the collective has already finished successfully, else a work handle (whose await throws
     * if it failed).
     */
    public static native long allReduceBucket(long group, long tensor, int op, boolean runInline, int bucket,
            int buckets);

    /** Queues a broadcast of the tensor from rank {@code root} ({@code broadcast}). Returns a work handle. */
    public static native long broadcast(long group, long tensor, int root);

    /**
     * Queues an all-gather of {@code input} into the flat {@code output} (world size x input
     * elements, {@code all_gather_into_tensor}). Returns a work handle.
     */
    public static native long allGatherIntoTensor(long group, long output, long input);

    /** Queues an all-gather of {@code input} into one output tensor per rank ({@code all_gather}). Returns a work handle. */
    public static native long allGather(long group, long[] outputs, long input);

    /** Queues a barrier ({@code barrier}). Returns a work handle. */
    public static native long barrier(long group);

    /** Queues a reduce of the tensor into rank {@code root}'s ({@code reduce}). Returns a work handle. */
    public static native long reduce(long group, long tensor, int root, int op);

    /**
     * Queues a reduce-scatter of the flat {@code input} (world size x output elements) into
     * {@code output} ({@code reduce_scatter_tensor}). Returns a work handle.
     */
    public static native long reduceScatterTensor(long group, long output, long input, int op);

    /** Queues a reduce-scatter of one input tensor per rank into {@code output} ({@code reduce_scatter}). Returns a work handle. */
    public static native long reduceScatter(long group, long output, long[] inputs, int op);

    /** Starts sending the tensor to rank {@code dst} ({@code isend}). Returns a work handle. */
    public static native long send(long group, long tensor, int dst, int tag);

    /** Starts receiving into the tensor from rank {@code src} ({@code irecv}). Returns a work handle. */
    public static native long recv(long group, long tensor, int src, int tag);

    /**
     * The group's flight record (native/src/comm/flight_recorder.h), oldest op first; with
     * {@code onlyOpen} only the ops neither completed nor failed. The array ({@link FlightRecordLayout}
     * names its positions): a header of 5 longs {fields per record (14), the ring's capacity (0: off), the
     * highest collective number that started, the steady clock now in ns, the wall clock now in ns
     * since the epoch}, then per op {record id, seq, kind, arg, dtype, numel, bucket, buckets,
     * peer, transport, state, queued ns, started ns, finished ns} (fingerprint.h's fields; times on
     * the steady clock, 0 until reached; transport and state: FlightTransport and FlightState
     * ordinals).
     */
    public static native long[] flightRecord(long group, boolean onlyOpen);

    /**
     * A collective's fingerprint in words ({@code describe} in native/src/comm/fingerprint.h), e.g.
     * "allReduce(AVG) of 1,234 float32 elements (#57, DDP bucket 2 of 3)".
     */
    public static native String describeCollective(long seq, int kind, int arg, int dtype, long numel, int bucket,
            int buckets, int peer);

    /**
     * Frees the group. Gloo: fails queued collectives, waits for the running one, closes the
     * connections. NCCL: waits for pending collectives (at most the timeout), then destroys the
     * communicator, or aborts it when the group failed.
     */
    public static native void destroy(long group);
}
