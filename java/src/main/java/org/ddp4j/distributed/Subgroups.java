package org.ddp4j.distributed;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import org.ddp4j.distributed.store.PrefixStore;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.tensor.Device;
import org.ddp4j.distributed.environment.ClusterEnvironment;

/**
 * The subgroups of one default group ({@link Distributed#newGroup}): each is a process group of
 * its own (own connections, own shared-memory segment, own collective numbering) that meets on
 * the default group's store under {@code ddp4j/group/<ranks>/<k>/}, where {@code <ranks>} is the
 * sorted member list and {@code k} counts this process's calls with that list. Members therefore
 * pair up by their list, not by a global call count: ranks outside a group need not call
 * {@code newGroup} for it (PyTorch's {@code use_local_synchronization=True}), and groups of
 * disjoint ranks may be made in any order. Closed with the default group.
 */
final class Subgroups implements AutoCloseable {
    private final ProcessGroup world;
    private final Store store;
    private final String masterAddr;
    private final Map<String, String> env;
    private final Map<List<Integer>, Integer> calls = new HashMap<>();
    private final List<ProcessGroup> created = new ArrayList<>();

    /**
     * @param store the default group's store (its init key space)
     * @param masterAddr MASTER_ADDR or the tcp:// host, for a Gloo subgroup's address; may be null
     * @param env the environment the default group was made with (GLOO_*, DDP4J_* settings)
     */
    Subgroups(ProcessGroup world, Store store, String masterAddr, Map<String, String> env) {
        this.world = world;
        this.store = store;
        this.masterAddr = masterAddr;
        this.env = env;
    }

    /**
     * See {@link Distributed#newGroup(List, Duration, String)}.
     *
     * @param timeout null: the default group's
     * @param backend null: the default group's
     */
    synchronized ProcessGroup newGroup(List<Integer> ranks, Duration timeout, String backend) {
        List<Integer> members = members(ranks);
        String b = backend == null ? world.backend() : World.checkBackend(backend) ? "nccl" : "gloo";
        Duration t = timeout != null ? timeout : ((NativeProcessGroup) world).timeout();
        int me = world.rank();
        int k = calls.merge(members, 1, Integer::sum);
        int groupRank = members.indexOf(me);
        if (groupRank < 0) {
            return new NonMemberGroup(me, members, b);
        }
        StringBuilder key = new StringBuilder("ddp4j/group/");
        for (int i = 0; i < members.size(); i++) {
            key.append(i == 0 ? "" : ",").append(members.get(i));
        }
        Store groupStore = new PrefixStore(key.append('/').append(k).toString(), store);
        NativeProcessGroup group;
        try {
            if (b.equals("nccl")) {
                Device device = world instanceof ProcessGroupNccl n ? n.device()
                        : World.ncclDevice(ClusterEnvironment.resolve(env));
                group = new ProcessGroupNccl(groupStore, groupRank, members.size(), t, device, null);
            } else {
                GlooOptions options = GlooOptions.fromEnvironment(env);
                String hostname = world instanceof ProcessGroupGloo g ? g.hostname()
                        : ProcessGroupGloo.defaultHostname(masterAddr, options);
                group = new ProcessGroupGloo(groupStore, groupRank, members.size(), t, hostname, null, options);
            }
        } catch (DistributedTimeoutException e) {
            // The rendezvous's hint is about starting the job; here the job runs and a member did not call.
            String missing = e.hint() != null && e.getCause() != null ? e.getCause().getMessage() : e.getMessage();
            throw new DistributedTimeoutException("newGroup(" + members + ") on rank " + me + " (group rank " + groupRank
                    + "): " + missing + ": " + (e.waitedForRank() >= 0 ? "is it" : "are they") + " not calling newGroup"
                    + " with these ranks? Ranks in this message are group ranks: group rank r is rank "
                    + members + "[r] of the default group. Every member must call newGroup with the same ranks, and"
                    + " as often (call #" + k + " with these ranks here)");
        }
        group.setRanks(members);
        created.add(group);
        return group;
    }

    /** The sorted, checked member list; null means every rank of the default group. */
    private List<Integer> members(List<Integer> ranks) {
        if (ranks == null) {
            return world.ranks();
        }
        if (ranks.isEmpty()) {
            throw new IllegalArgumentException("newGroup: the rank list is empty; pass at least one rank of [0, "
                    + world.size() + ")");
        }
        TreeSet<Integer> sorted = new TreeSet<>();
        for (Integer r : ranks) {
            Objects.requireNonNull(r, "newGroup: a rank in the list is null");
            if (r < 0 || r >= world.size()) {
                throw new IllegalArgumentException("newGroup: rank " + r + " is not a rank of the default group, [0, "
                        + world.size() + ")");
            }
            if (!sorted.add(r)) {
                throw new IllegalArgumentException("newGroup: rank " + r + " appears twice in " + ranks);
            }
        }
        return List.copyOf(sorted);
    }

    /** Closes every subgroup made here (each is idempotent). */
    @Override
    public synchronized void close() {
        for (ProcessGroup g : created) {
            g.close();
        }
        created.clear();
    }
}
