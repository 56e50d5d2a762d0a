package org.ddp4j.internal;

/**
 * JNI declarations for creating a Gloo process group (native/src/jni/gloo_natives.cpp). The group's
 * collectives and destruction are in {@link ProcessGroupNatives}, its works in {@link WorkNatives}.
 * Errors arrive as {@code DistributedException} / {@code DistributedTimeoutException} (rendezvous,
 * connecting) or {@code IllegalArgumentException} (bad arguments), with the native message.
 */
public final class GlooNatives {
    static {
        NativeLibrary.load();
    }

    private GlooNatives() {}

    /**
     * Rendezvous through {@code store} and connect to every other rank; blocks until all
     * {@code size} ranks have joined or {@code options.timeoutMs()} passes. Mirrors
     * {@code ProcessGroupGloo(store, rank, size, timeout)}.
     *
     * @param store the rendezvous store, called only during this call (from this and Gloo's threads)
     * @param rank this rank, in {@code [0, size)}
     * @param size the number of ranks, at least 1
     * @param options the group's settings (timeout, address, checks, small all-reduce, shared memory)
     * @return the group handle, for {@link ProcessGroupNatives}
     * @throws IllegalArgumentException for a non-positive timeout, a rank outside {@code [0, size)} or null options
     */
    public static native long create(NativeStore store, int rank, int size, GlooGroupOptions options);

    /**
     * The transport the group chose at construction: {@code "shm"}, {@code "shm+gloo"} or {@code "gloo"}.
     *
     * @throws IllegalStateException for a closed group
     */
    public static native String transport(long handle);
}
