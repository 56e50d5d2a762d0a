package org.ddp4j.distributed;

import java.util.Map;
import org.ddp4j.internal.Setting;

/**
 * The Gloo backend's settings from the environment, read in one place and passed to the native
 * group (the C++ {@code GlooOptions}), which reads no environment variable itself. Mirrors the
 * knobs of {@code ProcessGroupGloo.Options}.
 *
 * @param hostname DDP4J_GLOO_HOSTNAME: the address to bind and advertise, or null (then
 *     {@link ProcessGroupGloo#defaultHostname} picks one)
 * @param socketIfname GLOO_SOCKET_IFNAME: the network interface whose address to bind, or null
 * <p>Each variable is read through {@link Setting}: switches take 1/0, true/false, on/off or yes/no,
 * byte counts a non-negative integer with an optional K, M or G; anything else is an
 * {@link IllegalStateException} naming the variable.
 *
 * @param checkCollectives DDP4J_GLOO_CHECK_COLLECTIVES: false for "0" (or "false"...), which skips the
 *     fingerprint every rank exchanges before a collective that Gloo itself runs (ring all-reduce
 *     above the small size, broadcast, all-gather); true otherwise. Fingerprints inside ddp4j's
 *     own messages (small all-reduce, shared memory) are always compared
 * @param smallAllReduceBytes DDP4J_GLOO_SMALL_ALLREDUCE_BYTES: all-reduces of at most this many
 *     bytes take the one-round path (0 turns it off; default 256 KiB)
 * @param smallAllReduceSyncReads DDP4J_GLOO_SMALL_SYNC: false for "0" (or "false"...), which makes Gloo's network
 *     thread read the one-round path's sockets instead of the waiting thread
 * @param shm DDP4J_SHM: false for "0" (or "false"...), which keeps ranks that share a host on Gloo's
 *     TCP transport instead of shared memory (off on any rank turns it off for the whole group)
 * @param shmHostId DDP4J_SHM_HOST_ID: this rank's host identity for the shared-memory decision,
 *     or null for the real one (boot id, hostname, network and pid namespace); tests use it to
 *     pretend that ranks on one machine run on several hosts
 */
record GlooOptions(String hostname, String socketIfname, boolean checkCollectives, long smallAllReduceBytes,
        boolean smallAllReduceSyncReads, boolean shm, String shmHostId) {

    /** The default of {@link #smallAllReduceBytes}: 256 KiB, as the native GlooOptions. */
    static final long DEFAULT_SMALL_ALLREDUCE_BYTES = 256 << 10;

    /**
     * Reads every Gloo variable from {@code env} (e.g. {@code System.getenv()}) through {@link Setting}.
     *
     * @throws IllegalStateException naming the variable when a switch or byte count is malformed
     */
    static GlooOptions fromEnvironment(Map<String, String> env) {
        return new GlooOptions(Setting.GLOO_HOSTNAME.raw(env), env.get("GLOO_SOCKET_IFNAME"),
                Setting.GLOO_CHECK_COLLECTIVES.flag(env, true),
                Setting.GLOO_SMALL_ALLREDUCE_BYTES.bytes(env, DEFAULT_SMALL_ALLREDUCE_BYTES),
                Setting.GLOO_SMALL_SYNC.flag(env, true),
                Setting.SHM.flag(env, true),
                Setting.SHM_HOST_ID.raw(env));
    }

    /** These options with shared memory on or off and the given host identity (null: the real one). */
    GlooOptions withShm(boolean on, String hostId) {
        return new GlooOptions(hostname, socketIfname, checkCollectives, smallAllReduceBytes, smallAllReduceSyncReads,
                on, hostId);
    }
}
