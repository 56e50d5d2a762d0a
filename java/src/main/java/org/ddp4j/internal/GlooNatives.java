package org.ddp4j.internal;

import org.ddp4j.distributed.store.Store;

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
     * {@code size} ranks have joined or {@code timeoutMs} passes. Mirrors
     * {@code ProcessGroupGloo(store, rank, size, timeout)}.
     *
     * @param hostname the address this rank binds and advertises; empty lets Gloo bind
     *     {@code socketIfname}, or else this host's name
     * @param socketIfname the network interface to bind when {@code hostname} is empty (GLOO_SOCKET_IFNAME); may be empty
     * @param checkCollectives exchange a header before each collective so that ranks that disagree fail cleanly
     * @param smallAllReduceBytes all-reduces up to this many bytes take the one-round path (groups of 2 to 8 ranks); 0: never
     * @param smallAllReduceSyncReads the one-round path's connections in Gloo's sync mode
     * @param shm let ranks that share a host use shared memory (false on any rank: off for the group)
     * @param shmHostId this rank's host identity for that decision; empty: boot id, hostname and namespaces
     * @return the group handle, for {@link ProcessGroupNatives}
     */
    public static native long create(Store store, int rank, int size, long timeoutMs, String hostname,
            String socketIfname, boolean checkCollectives, long smallAllReduceBytes, boolean smallAllReduceSyncReads,
            boolean shm, String shmHostId);

    /**
     * The transport the group chose at construction: {@code "shm"}, {@code "shm+gloo"} or {@code "gloo"}.
     *
     * @throws IllegalStateException for a closed group
     */
    public static native String transport(long handle);
}
