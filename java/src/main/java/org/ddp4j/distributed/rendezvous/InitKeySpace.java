package org.ddp4j.distributed.rendezvous;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.store.PrefixStore;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;

/**
 * Gives each process-group initialisation on a shared store its own key space, so that a second
 * init in the same job (a new JVM under the same launcher, e.g. a JMH fork, or a second group in
 * one JVM) never reads the keys an earlier group left behind.
 *
 * <p>Scheme: every rank counts its own inits in the store ({@code add("ddp4j/init/count/<rank>",
 * 1)}); the n-th init of every rank uses the prefix {@code ddp4j/init/<n>/}, except the first,
 * which keeps the store's root key space (the keys of a job that inits once are as before, and
 * never collide with the counters or prefixes). The store outlives
 * the processes (the launcher hosts it), so the count survives a new JVM. Ranks must therefore
 * init in lock-step: the n-th init of one rank meets the n-th init of the others. Before joining,
 * each rank waits until every peer's count has reached n; a peer whose count is already beyond n
 * can never join this init, so that fails at once with a {@link DistributedException} naming the
 * ranks and their counts, and a peer that stays behind fails with a
 * {@link DistributedTimeoutException} after the group's timeout, naming it and its count.
 *
 * <p>Claims: before it counts its init, each rank claims its RANK for as long as its connection
 * to the store lasts ({@link Store#claimWhileConnected}, key {@code ddp4j/init/live/<rank>}), so
 * that a second process started with the same RANK fails within seconds naming both, whether
 * the first is still initialising or has long finished (a job already running): the claim is
 * held by a live process of another JVM. Without counting, the second claimant leaves the job's
 * init counts as they were, so a running job goes on unharmed; a first claimant still in its
 * init is failed with it (the conflict is written under that init). A rank that restarts in a
 * new JVM finds the claim free, since its old process's connection closed as it exited. On a
 * store without connections ({@link org.ddp4j.distributed.store.FileStore}) the second claimant
 * of a rank sees instead that the rank's previous init was made by another process that has not
 * finished it. Each rank also records who it is ({@link ProcessIdentity}) under its init number,
 * and the world size it was started with (and where that came from) under the init, so that ranks
 * started with different WORLD_SIZE values fail promptly naming both. Either conflict is written
 * under the init that the other processes are in, and they fail with the same message at their
 * next poll. A rank counts as arrived only after its checks passed, so nobody proceeds with a
 * peer that is about to fail.
 */
public final class InitKeySpace {
    /** How long a peer that looks ahead may take to show that it is a duplicate claim instead. */
    private static final long AHEAD_GRACE_NANOS = 2_000_000_000L;
    /**
     * How long a rank's claim held by another JVM is retried before it counts as a second claimant:
     * the holder may be a process of this rank that has just exited, whose connection the store is closing.
     */
    private static final long CLAIM_GRACE_NANOS = 2_000_000_000L;

    private InitKeySpace() {}

    /** {@link #enter(Store, int, int, String, Duration, ProcessIdentity)} as this process, its address unknown. */
    public static Store enter(Store store, int rank, int worldSize, Duration timeout) {
        return enter(store, rank, worldSize, null, timeout, ProcessIdentity.current(null));
    }

    /** {@link #enter(Store, int, int, String, Duration, ProcessIdentity)} without saying where the world size came from. */
    public static Store enter(Store store, int rank, int worldSize, Duration timeout, ProcessIdentity me) {
        return enter(store, rank, worldSize, null, timeout, me);
    }

    /**
     * Counts this init, checks this rank's claim and world size, and waits for the peers to reach the same count.
     *
     * @param worldSource where {@code worldSize} came from, for the mismatch message (e.g. "from the
     *     environment variable WORLD_SIZE"), or null
     * @param me who this process is, for the messages about duplicate claims
     * @return {@code store} itself for the first init, else {@code store} under this init's prefix
     * @throws DistributedException if a peer has initialised more groups on this store than this rank,
     *     if another live process holds this RANK ("RANK 1 was claimed twice: by pid 123 on host a (10.0.0.2)
     *     and by pid 456 on host b (10.0.0.3) ..."), or if ranks disagree on the world size ("WORLD_SIZE
     *     mismatch: rank 0 (pid ...) started with WORLD_SIZE=2 (from the environment variable WORLD_SIZE),
     *     rank 1 (pid ...) with WORLD_SIZE=3 (from initProcessGroup's worldSize argument) ...")
     * @throws DistributedTimeoutException if some peer has not reached this init within {@code timeout}
     */
    public static Store enter(Store store, int rank, int worldSize, String worldSource, Duration timeout,
            ProcessIdentity me) {
        boolean liveClaims = claimRank(store, rank, worldSize, me);
        long mine = store.add(countKey(rank), 1);
        store.set(claimKey(mine, rank), bytes(me.encode()));
        ProcessIdentity previous = mine > 1 ? ProcessIdentity.decode(text(store.get(claimKey(mine - 1, rank)))) : null;
        // With live claims the previous claimant has gone (this process holds the claim); else it may still run.
        boolean previousByOther = !liveClaims && previous != null && !previous.token().equals(me.token());
        if (previousByOther && !store.check(List.of(doneKey(mine - 1, rank)))) {
            String msg = claimedTwice(rank, worldSize, previous.description(), me.description());
            store.compareSet(conflictKey(mine - 1), new byte[0], bytes(msg)); // the other claimant's init
            throw new DistributedException(msg);
        }
        String source = worldSource == null ? "" : " (" + worldSource + ")";
        String claim = worldSize + "\n" + rank + "\n" + source + "\n" + me.description();
        String first = text(store.compareSet(worldKey(mine), new byte[0], bytes(claim)));
        String[] f = first.split("\n", 4);
        if (f.length == 4 && !f[0].equals(Integer.toString(worldSize))) {
            String msg = "WORLD_SIZE mismatch: rank " + f[1] + " (" + f[3] + ") started with WORLD_SIZE=" + f[0] + f[2]
                    + ", rank " + rank + " (" + me.description() + ") with WORLD_SIZE=" + worldSize + source
                    + "; start every process of the job with the same WORLD_SIZE";
            store.compareSet(conflictKey(mine), new byte[0], bytes(msg));
            throw new DistributedException(msg);
        }
        store.set(readyKey(mine, rank), bytes("1"));

        long deadline = System.nanoTime() + timeout.toNanos();
        long sleepMicros = 50;
        Map<Integer, Long> aheadSince = new HashMap<>();
        while (true) {
            if (store.check(List.of(conflictKey(mine)))) {
                throw new DistributedException(text(store.get(conflictKey(mine))));
            }
            List<String> behind = new ArrayList<>();
            List<String> ahead = new ArrayList<>();
            List<String> readyKeys = new ArrayList<>();
            List<Integer> level = new ArrayList<>();
            for (int peer = 0; peer < worldSize; peer++) {
                if (peer == rank) {
                    continue;
                }
                long theirs = store.add(countKey(peer), 0); // adding 0 reads the counter
                if (theirs < mine) {
                    behind.add("rank " + peer + " (at init #" + theirs + ")");
                } else if (theirs > mine) {
                    // a peer past this init, or a second claimant of its rank about to say so
                    long since = aheadSince.computeIfAbsent(peer, p -> System.nanoTime());
                    if (store.check(List.of(doneKey(mine, peer))) || System.nanoTime() - since > AHEAD_GRACE_NANOS) {
                        ahead.add("rank " + peer + " (at init #" + theirs + ")");
                    } else {
                        behind.add("rank " + peer + " (at init #" + theirs + ")");
                    }
                } else {
                    readyKeys.add(readyKey(mine, peer));
                    level.add(peer);
                }
            }
            if (!ahead.isEmpty()) {
                throw new DistributedException("process group init #" + mine + " of rank " + rank + ": " + String.join(", ",
                        ahead) + " is already past it; ranks must initialise process groups in lock-step (the same number of"
                        + " initProcessGroup calls on this store, in the same order)");
            }
            if (!readyKeys.isEmpty() && !store.check(readyKeys)) {
                for (int i = 0; i < readyKeys.size(); i++) {
                    if (!store.check(List.of(readyKeys.get(i)))) {
                        behind.add("rank " + level.get(i) + " (at init #" + mine + ", checking its claim)");
                    }
                }
            }
            if (behind.isEmpty()) {
                store.set(doneKey(mine, rank), bytes("1"));
                return mine == 1 ? store : new PrefixStore("ddp4j/init/" + mine, store);
            }
            if (System.nanoTime() - deadline > 0) {
                throw new DistributedTimeoutException("process group init #" + mine + " of rank " + rank + ": "
                        + String.join(", ", behind) + " did not reach it within " + timeout.toMillis() / 1000.0 + " s (a rank that has not"
                        + " started, or ranks that do not initialise process groups in lock-step)"
                        + (previousByOther ? "; init #" + (mine - 1) + " of rank " + rank + " was made by another"
                        + " process, " + previous.description() + ": if it is still running, RANK " + rank
                        + " is claimed twice" : ""));
            }
            sleep(sleepMicros);
            sleepMicros = Math.min(sleepMicros * 2, 20_000); // the peers usually arrive within milliseconds
        }
    }

    /**
     * Claims {@code rank} for this process while its store connection lasts; fails if another live
     * process holds it (after {@link #CLAIM_GRACE_NANOS}, for a holder whose connection is closing).
     *
     * @return whether the store keeps such claims (false for stores without connections)
     */
    private static boolean claimRank(Store store, int rank, int worldSize, ProcessIdentity me) {
        byte[] mine = bytes(me.encode());
        long since = System.nanoTime();
        while (true) {
            byte[] held = store.claimWhileConnected(liveKey(rank), mine);
            if (held == null) {
                return false;
            }
            ProcessIdentity holder = ProcessIdentity.decode(text(held));
            if (Arrays.equals(held, mine) || holder.token().equals(me.token())) {
                return true; // ours, or this JVM's earlier group, not yet closed
            }
            if (System.nanoTime() - since > CLAIM_GRACE_NANOS) {
                String msg = claimedTwice(rank, worldSize, holder.description(), me.description());
                long theirs = store.add(countKey(rank), 0); // the holder's init: adding 0 reads the counter
                if (theirs > 0 && !store.check(List.of(doneKey(theirs, rank)))) {
                    store.compareSet(conflictKey(theirs), new byte[0], bytes(msg)); // still initialising: fail it too
                }
                throw new DistributedException(msg);
            }
            sleep(50_000);
        }
    }

    /** "RANK r was claimed twice: by FIRST and by SECOND; ..." with the fix. */
    static String claimedTwice(int rank, int worldSize, String first, String second) {
        return "RANK " + rank + " was claimed twice: by " + first + " and by " + second + "; give each process its own"
                + " RANK in [0, " + worldSize + "), or start them with the launcher (scripts/ddp4j-run or"
                + " org.ddp4j.launch.Launcher), which assigns the ranks";
    }

    /** The live process that holds {@code rank} on {@code store}, or null if none does (or the store cannot tell). */
    static ProcessIdentity holder(Store store, int rank) {
        byte[] absent = {0}; // no claim is a single NUL: compareSet with it reads the key without waiting or writing
        byte[] held = store.compareSet(liveKey(rank), absent, absent);
        return Arrays.equals(held, absent) ? null : ProcessIdentity.decode(text(held));
    }

    static String liveKey(int rank) {
        return "ddp4j/init/live/" + rank;
    }

    static String claimKey(long init, int rank) {
        return "ddp4j/init/claim/" + init + "/" + rank;
    }

    static String doneKey(long init, int rank) {
        return "ddp4j/init/done/" + init + "/" + rank;
    }

    static String readyKey(long init, int rank) {
        return "ddp4j/init/ready/" + init + "/" + rank;
    }

    static String worldKey(long init) {
        return "ddp4j/init/world/" + init;
    }

    static String conflictKey(long init) {
        return "ddp4j/init/conflict/" + init;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    static String countKey(int rank) {
        return "ddp4j/init/count/" + rank;
    }

    private static void sleep(long micros) {
        try {
            Thread.sleep(micros / 1000, (int) (micros % 1000) * 1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DistributedException("interrupted while waiting for the other ranks to initialise", e);
        }
    }
}
