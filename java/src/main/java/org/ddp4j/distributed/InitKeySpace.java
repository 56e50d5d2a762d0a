package org.ddp4j.distributed;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.ddp4j.distributed.store.PrefixStore;
import org.ddp4j.distributed.store.Store;

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
 */
final class InitKeySpace {
    private InitKeySpace() {}

    /**
     * Counts this init and waits for the peers to reach the same count.
     *
     * @return {@code store} itself for the first init, else {@code store} under this init's prefix
     * @throws DistributedException if a peer has initialised more groups on this store than this rank
     * @throws DistributedTimeoutException if some peer has not reached this init within {@code timeout}
     */
    static Store enter(Store store, int rank, int worldSize, Duration timeout) {
        long mine = store.add(countKey(rank), 1);
        long deadline = System.nanoTime() + timeout.toNanos();
        long sleepMicros = 50;
        while (true) {
            List<String> behind = new ArrayList<>();
            List<String> ahead = new ArrayList<>();
            for (int peer = 0; peer < worldSize; peer++) {
                if (peer == rank) {
                    continue;
                }
                long theirs = store.add(countKey(peer), 0); // adding 0 reads the counter
                if (theirs < mine) {
                    behind.add("rank " + peer + " (at init #" + theirs + ")");
                } else if (theirs > mine) {
                    ahead.add("rank " + peer + " (at init #" + theirs + ")");
                }
            }
            if (!ahead.isEmpty()) {
                throw new DistributedException("process group init #" + mine + " of rank " + rank + ": " + String.join(", ",
                        ahead) + " is already past it; ranks must initialise process groups in lock-step (the same number of"
                        + " initProcessGroup calls on this store, in the same order)");
            }
            if (behind.isEmpty()) {
                return mine == 1 ? store : new PrefixStore("ddp4j/init/" + mine, store);
            }
            if (System.nanoTime() - deadline > 0) {
                throw new DistributedTimeoutException("process group init #" + mine + " of rank " + rank + ": "
                        + String.join(", ", behind) + " did not reach it within " + timeout.toMillis() / 1000.0 + " s (a rank that has not"
                        + " started, or ranks that do not initialise process groups in lock-step)");
            }
            sleep(sleepMicros);
            sleepMicros = Math.min(sleepMicros * 2, 20_000); // the peers usually arrive within milliseconds
        }
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
