package org.ddp4j.launch;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;
import org.ddp4j.distributed.rendezvous.LauncherJob;
import org.ddp4j.distributed.rendezvous.ProcessIdentity;
import org.ddp4j.distributed.store.Store;

/**
 * Rank assignment through the store, for nodes that may run different numbers of workers.
 *
 * <p>Each launcher checks that all agree on {@code --nnodes}, claims its node rank, publishes its
 * process count under {@code nproc/<nodeRank>} and waits for every node's count. Its first global
 * rank is then the sum of the counts of the lower node ranks, and the world size is the total. The
 * store passed in is already scoped to one attempt, so restarts never see an old attempt's keys.
 */
final class NodeRendezvous {

    /** The ranks of one node, as agreed with the others. */
    record NodeRanks(int rankOffset, int worldSize, int[] nprocByNode) {
        @Override
        public String toString() {
            return "NodeRanks[rankOffset=" + rankOffset + ", worldSize=" + worldSize
                    + ", nprocByNode=" + Arrays.toString(nprocByNode) + "]";
        }
    }

    static final String NNODES_KEY = "nnodes";

    private NodeRendezvous() {}

    /** The key under which node {@code nodeRank} publishes its process count. */
    static String nprocKey(int nodeRank) {
        return "nproc/" + nodeRank;
    }

    /**
     * Joins the rendezvous and waits for all {@code nnodes} nodes.
     *
     * @throws DistributedTimeoutException naming the node ranks that did not join within
     *     {@code timeout}
     * @throws DistributedException if the nodes disagree on {@code --nnodes} or two launchers
     *     claim the same node rank
     */
    static NodeRanks join(Store store, int nodeRank, int nnodes, int nproc, Duration timeout, String endpoint) {
        return join(store, nodeRank, nnodes, nproc, timeout, endpoint, () -> null);
    }

    /**
     * As {@link #join(Store, int, int, int, Duration, String)}, giving up early with a
     * {@link DistributedException} carrying {@code abort}'s message once it returns one (the
     * keep-alive lost a node: waiting on for it would be pointless).
     */
    static NodeRanks join(Store store, int nodeRank, int nnodes, int nproc, Duration timeout, String endpoint,
            Supplier<String> abort) {
        byte[] mine = bytes(nnodes);
        byte[] agreed = store.compareSet(NNODES_KEY, new byte[0], mine);
        if (!Arrays.equals(agreed, mine)) {
            throw new DistributedException("node " + nodeRank + " was started with --nnodes " + nnodes
                    + " but another node with --nnodes " + string(agreed)
                    + "; give every launcher of the job the same --nnodes");
        }
        long claims = store.add("joined/" + nodeRank, 1);
        if (claims > 1) {
            throw new DistributedException("another launcher already joined the store at " + endpoint
                    + " as node rank " + nodeRank + "; give each launcher its own --node-rank in 0.."
                    + (nnodes - 1));
        }
        store.set(nprocKey(nodeRank), bytes(nproc));

        List<String> keys = new ArrayList<>();
        for (int node = 0; node < nnodes; node++) {
            keys.add(nprocKey(node));
        }
        try {
            awaitAll(store, keys, timeout, abort);
        } catch (DistributedTimeoutException e) {
            List<Integer> missing = new ArrayList<>();
            for (int node = 0; node < nnodes; node++) {
                if (!store.check(List.of(nprocKey(node)))) {
                    missing.add(node);
                }
            }
            if (!missing.isEmpty()) {
                throw new DistributedTimeoutException("rendezvous at " + endpoint + " timed out after "
                        + timeout.toSeconds() + " s: node rank(s) "
                        + missing.stream().map(String::valueOf).collect(Collectors.joining(", "))
                        + " of --nnodes " + nnodes + " never joined; start a launcher with --node-rank "
                        + missing.get(0) + " and the same --master-addr/--master-port, or raise --rdzv-timeout");
            }
            // Everyone arrived just as the wait gave up: carry on.
        }

        int[] counts = new int[nnodes];
        int offset = 0;
        int world = 0;
        for (int node = 0; node < nnodes; node++) {
            counts[node] = Integer.parseInt(string(store.get(nprocKey(node))));
            if (node < nodeRank) {
                offset += counts[node];
            }
            world += counts[node];
        }
        return new NodeRanks(offset, world, counts);
    }

    /**
     * Tells processes that join the store without a launcher which attempt runs and its world size
     * ({@link LauncherJob}), so that one with another WORLD_SIZE or a duplicated RANK is told at once.
     *
     * @param root the store's root key space (not an attempt's)
     */
    static void publish(Store root, int attempt, NodeRanks r) {
        int nnodes = r.nprocByNode().length;
        String layout = "--nnodes " + nnodes + ", " + (nnodes == 1 ? r.nprocByNode()[0] + " worker(s)"
                : "workers per node " + Arrays.toString(r.nprocByNode()));
        new LauncherJob(attempt, r.worldSize(), layout, "node 0's launcher, " + ProcessIdentity.current(null).description())
                .publish(root);
    }

    /** Waits for {@code keys} in slices of at most {@link #SLICE}, asking {@code abort} between slices. */
    private static void awaitAll(Store store, List<String> keys, Duration timeout, Supplier<String> abort) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            String why = abort.get();
            if (why != null) {
                throw new DistributedException("rendezvous abandoned: " + why);
            }
            long left = deadline - System.nanoTime();
            Duration slice = Duration.ofNanos(Math.max(1_000_000L, Math.min(left, SLICE.toNanos())));
            try {
                store.waitFor(keys, slice);
                return;
            } catch (DistributedTimeoutException e) {
                if (System.nanoTime() - deadline >= 0) {
                    throw e;
                }
            }
        }
    }

    /** How long one wait of the rendezvous lasts before the keep-alive's verdict is asked again. */
    static final Duration SLICE = Duration.ofSeconds(1);

    static byte[] bytes(long value) {
        return Long.toString(value).getBytes(StandardCharsets.UTF_8);
    }

    static String string(byte[] value) {
        return new String(value, StandardCharsets.UTF_8);
    }
}
