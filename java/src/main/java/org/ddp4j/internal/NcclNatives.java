package org.ddp4j.internal;

/**
 * JNI declarations for the NCCL process group (native/src/jni/cuda/nccl_natives.cpp, in
 * libddp4j_cuda.so). Call {@link org.ddp4j.cuda.Cuda#ensureLoaded()} before any of these: this
 * class does not load the CUDA library itself.
 *
 * <p>NCCL is opened on first use (dlopen of {@code DDP4J_NCCL_LIBRARY}, else
 * {@code libnccl.so.2}); without it, or with an NCCL older than 2.14, the calls throw
 * {@link IllegalStateException} saying where NCCL comes from. {@link #create} returns the handle
 * of a native {@code ProcessGroupNccl}; its collectives and destruction are in
 * {@link ProcessGroupNatives}, its works in {@link WorkNatives} (both in libddp4j.so, reaching the
 * NCCL code through the native {@code ProcessGroup} and {@code Work} virtuals). Errors arrive as
 * {@code DistributedException} / {@code DistributedTimeoutException} (creating the communicator)
 * or {@link IllegalArgumentException} (bad arguments).
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
     * {@code device}; blocks until all ranks joined or {@code timeoutMs} passes. Returns the group
     * handle, for {@link ProcessGroupNatives}.
     */
    public static native long create(byte[] uniqueId, int rank, int size, int device, long timeoutMs);
}
