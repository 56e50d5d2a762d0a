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
     * @param records the store where a rank that loses a peer in a collective records the death and reads its
     *     peers' records and exit marks (native/src/comm/gloo/peer_loss.h), called from the group's threads for its
     *     whole life; each call must give up within seconds (a dead store must not hold up a failing rank).
     *     Null: errors name the peer whose connection closed
     * @param rank this rank, in {@code [0, size)}
     * @param size the number of ranks, at least 1
     * @param options the group's settings (timeout, address, checks, small all-reduce, shared memory)
     * @return the group handle, for {@link ProcessGroupNatives}
     * @throws IllegalArgumentException for a non-positive timeout, a rank outside {@code [0, size)} or null options
     */
    public static native long create(NativeStore store, NativeStore records, int rank, int size,
            GlooGroupOptions options);

    /**
     * The transport the group chose at construction: {@code "shm"}, {@code "shm+gloo"} or {@code "gloo"}.
     *
     * @throws IllegalStateException for a closed group
     */
    public static native String transport(long handle);
}
