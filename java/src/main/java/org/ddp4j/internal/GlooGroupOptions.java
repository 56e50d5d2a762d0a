package org.ddp4j.internal;

/**
 * The settings of a native Gloo process group (the C++ {@code GlooOptions}), passed whole to
 * {@link GlooNatives#create}; the C++ side reads the fields by name (native/src/jni/gloo_natives.cpp,
 * names and JNI types in native/src/jni/java_names.h, which must change with this record).
 *
 * @param timeoutMs how long to wait for the other ranks, and for each collective, in milliseconds;
 *     must be positive ({@link GlooNatives#create} throws {@link IllegalArgumentException} otherwise)
 * @param hostname the address this rank binds and advertises; null or empty lets Gloo bind
 *     {@code socketIfname}, or else this host's name
 * @param socketIfname the network interface to bind when {@code hostname} is empty
 *     (GLOO_SOCKET_IFNAME); null or empty: none
 * @param checkCollectives exchange a header before each collective that Gloo runs itself, so that
 *     ranks that disagree fail cleanly
 * @param smallAllReduceBytes all-reduces of at most this many bytes take the one-round path
 *     (groups of 2 to 8 ranks); 0: never
 * @param smallAllReduceSyncReads the one-round path's connections in Gloo's sync mode
 * @param shm let ranks that share a host use shared memory (false on any rank: off for the group)
 * @param shmHostId this rank's host identity for that decision; null or empty: boot id, hostname
 *     and namespaces
 */
public record GlooGroupOptions(long timeoutMs, String hostname, String socketIfname, boolean checkCollectives,
        long smallAllReduceBytes, boolean smallAllReduceSyncReads, boolean shm, String shmHostId) {}
