package org.ddp4j.distributed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Linear;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.parallel.DistributedDataParallelOptions;

/**
 * A rank process for {@link CollectivesMultiProcessTest} (env://, 2 to 4 ranks): the
 * remaining collectives and subgroups, each result checked against the arithmetic done here (every
 * rank knows every rank's input: {@link #value}).
 *
 * <p>{@code values}: reduce, reduceScatter (both forms), send/recv and isend/irecv on the default
 * group; subgroups {@code newGroup([even ranks])} and {@code newGroup([odd ranks])} (each rank calls
 * only its own: no global agreement needed) with their collectives, group ranks and a DDP step on
 * the even group equal to one process's; {@code newGroup([1..n-1])} seen by rank 0 as a
 * non-member. Prints {@code checks passed rank=R} and exits 0.
 *
 * <p>{@code mismatch}: each disagreement in a fresh subgroup of all ranks (a disagreement on
 * shared memory breaks its group): reduce to different roots, reduceScatter against allReduce,
 * a send and a recv of different sizes; and rank 0 making a group with rank 1, which never
 * comes (a timeout of 2 s). Prints {@code caught rank=R case=C: MESSAGE} per case
 * and exits 0. A failed check exits 1, anything else 2.
 */
public final class CollectivesMain {
    private CollectivesMain() {}

    public static void main(String[] args) {
        int rank = -1;
        int exit;
        try {
            ProcessGroup world = Distributed.initProcessGroup("gloo");
            rank = world.rank();
            try (var scope = Tensors.scope()) {
                if (args[0].equals("values")) {
                    values(world);
                    System.out.println("checks passed rank=" + rank);
                } else {
                    mismatches(world);
                }
            }
            Distributed.destroyProcessGroup();
            exit = 0;
        } catch (AssertionError e) {
            System.out.println("check FAILED rank=" + rank + ": " + e.getMessage());
            e.printStackTrace(System.out);
            exit = 1;
        } catch (Throwable e) {
            System.out.println("error rank=" + rank + ": " + e);
            e.printStackTrace(System.out);
            exit = 2;
        }
        System.out.flush();
        System.exit(exit);
    }

    /** Element i of default-group rank r's input: distinct, exact in float32. */
    static float value(int rank, int i) {
        return (rank + 1) * 100 + i;
    }

    static Tensor input(int rank, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = value(rank, i);
        }
        return Tensor.of(v, n);
    }

    private static void values(ProcessGroup world) {
        int rank = world.rank();
        int n = world.size();
        List<Integer> all = world.ranks();

        // reduce: the root gets the sum, the others keep their input.
        for (int size : new int[] {5, 70_000}) { // under and over the small all-reduce's 256 KiB
            Tensor t = input(rank, size);
            Distributed.reduce(t, n - 1, ReduceOp.SUM);
            for (int i : new int[] {0, size - 1}) {
                check(t.toFloatArray()[i] == (rank == n - 1 ? sum(all, i) : value(rank, i)), "reduce element " + i);
            }
        }
        // reduceScatterTensor and reduceScatter(list, AVG).
        Tensor out = Tensor.zeros(3);
        Distributed.reduceScatterTensor(out, input(rank, 3 * n), ReduceOp.SUM);
        for (int i = 0; i < 3; i++) {
            check(out.toFloatArray()[i] == sum(all, 3 * rank + i), "reduceScatterTensor element " + i);
        }
        List<Tensor> inputs = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            inputs.add(Tensor.of(new float[] {(rank + 1) * (r + 1), 0}, 2));
        }
        Tensor avg = Tensor.zeros(2);
        Distributed.reduceScatter(avg, inputs, ReduceOp.AVG);
        check(Math.abs(avg.toFloatArray()[0] - (rank + 1) * (n + 1) / 2f) < 1e-5, "reduceScatter AVG: " + avg.toFloatArray()[0]);

        // A ring: every rank sends first, then receives (the sends must not wait for the recvs).
        int next = (rank + 1) % n;
        int prev = (rank + n - 1) % n;
        Work sent = Distributed.isend(input(rank, 6), next);
        Tensor got = Tensor.zeros(6);
        check(Distributed.recv(got, prev) == prev, "recv returns the source");
        sent.await();
        check(got.toFloatArray()[5] == value(prev, 5), "ring recv");
        // Tags: received in another order than sent.
        if (rank == 0) {
            Distributed.isend(Tensor.of(new float[] {1}, 1), 1, 7);
            Distributed.send(Tensor.of(new float[] {2}, 1), 1, 9);
        } else if (rank == 1) {
            Tensor nine = Tensor.zeros(1);
            Tensor seven = Tensor.zeros(1);
            Distributed.recv(nine, 0, 9);
            Distributed.recv(seven, 0, 7);
            check(nine.toFloatArray()[0] == 2 && seven.toFloatArray()[0] == 1, "tags");
        }

        // Subgroups: evens and odds; each rank makes only its own.
        List<Integer> mine = new ArrayList<>();
        for (int r = rank % 2; r < n; r += 2) {
            mine.add(r);
        }
        List<Integer> reversed = new ArrayList<>(mine);
        java.util.Collections.reverse(reversed); // the order of the list does not matter
        ProcessGroup sub = Distributed.newGroup(reversed);
        check(sub.isMember() && sub.ranks().equals(mine), "subgroup ranks " + sub.ranks());
        check(sub.rank() == mine.indexOf(rank) && sub.size() == mine.size(), "subgroup rank " + sub.rank());
        check(Distributed.getGlobalRank(sub, sub.rank()) == rank, "getGlobalRank");
        check(Distributed.getGroupRank(sub, rank) == sub.rank(), "getGroupRank");
        Tensor s = input(rank, 4);
        sub.allReduce(s, ReduceOp.SUM).await();
        check(s.toFloatArray()[3] == sum(mine, 3), "subgroup allReduce " + s.toFloatArray()[3]);
        Tensor b = rank == mine.get(mine.size() - 1) ? input(rank, 2) : Tensor.zeros(2);
        sub.broadcast(b, mine.size() - 1).await();
        check(b.toFloatArray()[1] == value(mine.get(mine.size() - 1), 1), "subgroup broadcast (group rank as source)");
        Tensor r0 = input(rank, 3);
        sub.reduce(r0, 0, ReduceOp.MAX).await();
        check(r0.toFloatArray()[2] == (sub.rank() == 0 ? value(mine.get(mine.size() - 1), 2) : value(rank, 2)),
                "subgroup reduce MAX");
        if (mine.size() > 1) {
            if (sub.rank() == 0) {
                sub.send(input(rank, 3), 1, 5).await();
            } else if (sub.rank() == 1) {
                Tensor t = Tensor.zeros(3);
                sub.recv(t, 0, 5).await();
                check(t.toFloatArray()[0] == value(mine.get(0), 0), "subgroup send/recv uses group ranks");
            }
        }
        // PyTorch's group= form: source and destination are default-group ranks.
        int last = mine.get(mine.size() - 1);
        Tensor g = rank == last ? input(rank, 2) : Tensor.zeros(2);
        Distributed.broadcast(g, last, sub);
        check(g.toFloatArray()[1] == value(last, 1), "broadcast with group= (default-group source rank)");
        Tensor gs = input(rank, 2);
        Distributed.allReduce(gs, ReduceOp.SUM, sub);
        check(gs.toFloatArray()[0] == sum(mine, 0), "allReduce with group=");
        if (mine.size() > 1) {
            if (rank == mine.get(0)) {
                Distributed.send(input(rank, 2), mine.get(1), sub, 4);
            } else if (rank == mine.get(1)) {
                Tensor t = Tensor.zeros(2);
                check(Distributed.recv(t, mine.get(0), sub, 4) == mine.get(0), "recv with group= returns the source");
                check(t.toFloatArray()[1] == value(mine.get(0), 1), "send/recv with group=");
            }
        }
        // The default group goes on beside its subgroups.
        Tensor w = input(rank, 2);
        Distributed.allReduce(w, ReduceOp.SUM);
        check(w.toFloatArray()[0] == sum(all, 0), "default group after subgroups");

        // DDP over the even ranks' group equals one process's step on both batches.
        if (rank % 2 == 0 && mine.size() > 1) {
            ddpOnSubgroup(sub, rank, mine);
        }

        // Rank 0 is not in [1, n): it gets a non-member at once; the members make the group.
        List<Integer> rest = all.subList(1, n);
        ProcessGroup tail = Distributed.newGroup(rest);
        if (rank == 0) {
            check(!tail.isMember() && tail.rank() == -1 && Distributed.getRank(tail) == -1, "non-member rank");
            try {
                tail.allReduce(Tensor.zeros(1), ReduceOp.SUM);
                check(false, "a non-member's collective must throw");
            } catch (IllegalStateException e) {
                check(e.getMessage().equals("allReduce: rank 0 is not a member of this group (default-group ranks "
                        + rest + "); only members may call its collectives: check group.isMember() first"), e.getMessage());
            }
            // PyTorch's group= form does nothing on a non-member.
            Tensor untouched = Tensor.ones(1);
            Distributed.allReduce(untouched, ReduceOp.SUM, tail);
            Distributed.broadcast(untouched, 1, tail);
            Distributed.barrier(tail);
            check(untouched.toFloatArray()[0] == 1, "group= collectives are no-ops on a non-member");
        } else {
            Tensor t = Tensor.ones(1);
            tail.allReduce(t, ReduceOp.SUM).await();
            check(t.toFloatArray()[0] == n - 1, "tail group allReduce");
            Tensor b2 = rank == 1 ? Tensor.of(new float[] {9}, 1) : Tensor.zeros(1);
            Distributed.broadcast(b2, 1, tail);
            check(b2.toFloatArray()[0] == 9, "broadcast with group= from default-group rank 1 (group rank 0)");
            Distributed.barrier(tail);
        }
        Distributed.barrier();
    }

    /** One DDP step on the subgroup against the same arithmetic in this process. */
    private static void ddpOnSubgroup(ProcessGroup sub, int rank, List<Integer> members) {
        Linear model = new Linear(4, 2, true, new Generator(11));
        Linear reference = new Linear(4, 2, true, new Generator(11));
        // Averaged over the members, as DDP does: (sum over members of their batch's loss) / members.
        Tensor loss = null;
        for (int member : members) {
            Tensor l = reference.forward(input(member, 8).reshape(2, 4).mul(0.01f)).sum();
            loss = loss == null ? l : loss.add(l);
        }
        loss.mul(1f / members.size()).backward();
        // The gradients live in DDP's buckets: compare them before closing it.
        try (DistributedDataParallel ddp = new DistributedDataParallel(model,
                DistributedDataParallelOptions.defaults().processGroup(sub))) {
            ddp.forward(input(rank, 8).reshape(2, 4).mul(0.01f)).sum().backward();
            Map<String, Tensor> got = model.namedParameters();
            for (Map.Entry<String, Tensor> e : reference.namedParameters().entrySet()) {
                float[] want = e.getValue().grad().toFloatArray();
                float[] have = got.get(e.getKey()).grad().toFloatArray();
                for (int i = 0; i < want.length; i++) {
                    check(Math.abs(want[i] - have[i]) <= 1e-5f * Math.max(1, Math.abs(want[i])), "DDP on a subgroup: "
                            + e.getKey() + " grad " + Arrays.toString(have) + " vs " + Arrays.toString(want));
                }
            }
        }
    }

    private static void mismatches(ProcessGroup world) {
        int rank = world.rank();
        int n = world.size();
        expectMismatch(rank, "reduce-root", () -> {
            ProcessGroup g = Distributed.newGroup(null);
            g.reduce(Tensor.ones(6), rank == 1 ? 1 : 0, ReduceOp.SUM).await();
        });
        expectMismatch(rank, "reducescatter-vs-allreduce", () -> {
            ProcessGroup g = Distributed.newGroup(null);
            if (rank == 0) {
                g.reduceScatterTensor(Tensor.zeros(2), Tensor.ones(2 * n), ReduceOp.SUM).await();
            } else {
                g.allReduce(Tensor.ones(2 * n), ReduceOp.SUM).await();
            }
        });
        if (rank < 2) {
            expectMismatch(rank, "send-recv-size", () -> {
                ProcessGroup g = Distributed.newGroup(List.of(0, 1));
                if (rank == 0) {
                    g.send(Tensor.ones(10), 1, 3).await();
                } else {
                    g.recv(Tensor.zeros(12), 0, 3).await();
                }
            });
        }
        if (rank == 0) {
            // Rank 1 never makes this group: rank 0 times out naming it, in default-group terms too.
            try {
                Distributed.newGroup(List.of(1, 0), java.time.Duration.ofSeconds(2), null);
                check(false, "newGroup without its other member returned");
            } catch (DistributedTimeoutException e) {
                System.out.println("caught rank=0 case=newgroup-alone: " + e.getMessage());
            }
        }
        Distributed.barrier();
    }

    private static void expectMismatch(int rank, String name, Runnable body) {
        try {
            body.run();
            check(false, name + ": the disagreement was not caught");
        } catch (DistributedException e) {
            System.out.println("caught rank=" + rank + " case=" + name + ": " + e.getMessage());
        }
    }

    private static float sum(List<Integer> ranks, int i) {
        float s = 0;
        for (int r : ranks) {
            s += value(r, i);
        }
        return s;
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }
}
