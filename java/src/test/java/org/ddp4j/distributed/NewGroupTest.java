package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.ddp4j.tensor.Tensor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Distributed.newGroup and the new collectives' argument errors in one process (a world of one
 * rank over tcp://); the multi-rank behaviour is in {@link CollectivesMultiProcessTest}.
 */
class NewGroupTest {
    @AfterEach
    void destroy() {
        Distributed.destroyProcessGroup();
    }

    private static ProcessGroup initWorldOfOne() throws Exception {
        return Distributed.initProcessGroup("gloo", "tcp://127.0.0.1:" + DistributedTest.freePort(), 1, 0);
    }

    @Test
    void newGroupNeedsTheDefaultGroup() {
        var e = assertThrows(IllegalStateException.class, () -> Distributed.newGroup(List.of(0)));
        assertTrue(e.getMessage().startsWith("the default process group has not been initialized"), e.getMessage());
    }

    @Test
    void badRankListsAreRefusedNamingTheRank() throws Exception {
        initWorldOfOne();
        assertEquals("newGroup: the rank list is empty; pass at least one rank of [0, 1)",
                assertThrows(IllegalArgumentException.class, () -> Distributed.newGroup(List.of())).getMessage());
        assertEquals("newGroup: rank 1 is not a rank of the default group, [0, 1)",
                assertThrows(IllegalArgumentException.class, () -> Distributed.newGroup(List.of(0, 1))).getMessage());
        assertEquals("newGroup: rank 0 appears twice in [0, 0]",
                assertThrows(IllegalArgumentException.class, () -> Distributed.newGroup(Arrays.asList(0, 0))).getMessage());
        var backend = assertThrows(IllegalArgumentException.class, () -> Distributed.newGroup(List.of(0), null, "mpi"));
        assertTrue(backend.getMessage().startsWith("unknown backend \"mpi\""), backend.getMessage());
    }

    @Test
    void aSubgroupWorksAndClosesWithTheDefaultGroup() throws Exception {
        initWorldOfOne();
        ProcessGroup g = Distributed.newGroup(null);
        assertTrue(g.isMember());
        assertEquals(List.of(0), Distributed.getProcessGroupRanks(g));
        assertEquals(0, Distributed.getGroupRank(g, 0));
        assertEquals("rank 3 is not a member of the group [0]",
                assertThrows(IllegalArgumentException.class, () -> Distributed.getGroupRank(g, 3)).getMessage());
        assertEquals("group rank 1 is not in [0, 1)",
                assertThrows(IllegalArgumentException.class, () -> Distributed.getGlobalRank(g, 1)).getMessage());
        Tensor t = Tensor.of(new float[] {1, 2}, 2);
        g.reduce(t, 0).await();
        Tensor out = Tensor.zeros(2);
        g.reduceScatterTensor(out, t, ReduceOp.MAX).await();
        assertArrayEquals(new float[] {1, 2}, out.toFloatArray());
        var notMember = assertThrows(IllegalArgumentException.class, () -> Distributed.broadcast(t, 3, g));
        assertEquals("broadcast: source rank 3 is not a member of the group [0] (with a group argument, ranks are the"
                + " default group's, as in PyTorch)", notMember.getMessage());
        Distributed.destroyProcessGroup();
        assertTrue(((NativeProcessGroup) g).isClosed());
    }

    @Test
    void pointToPointArgumentsAreCheckedAtTheCall() throws Exception {
        initWorldOfOne();
        Tensor t = Tensor.zeros(2);
        var self = assertThrows(IllegalArgumentException.class, () -> Distributed.send(t, 0));
        assertEquals("send: destination rank 0 is this rank itself; a rank cannot send to or receive from itself (copy"
                + " the tensor instead)", self.getMessage());
        var range = assertThrows(IllegalArgumentException.class, () -> Distributed.irecv(t, 4));
        assertEquals("recv: source rank 4 is not in [0, 1) (ranks of this group, which has 1 rank)", range.getMessage());
        var dst = assertThrows(IllegalArgumentException.class, () -> Distributed.reduce(t, 1, ReduceOp.SUM));
        assertEquals("reduce: destination rank 1 is not in [0, 1) (ranks of this group, which has 1 rank)",
                dst.getMessage());
        var list = assertThrows(IllegalArgumentException.class,
                () -> Distributed.reduceScatter(t, List.of(t, t), ReduceOp.SUM));
        assertEquals("reduceScatter: got 2 input tensors for a world of 1; pass one per rank", list.getMessage());
    }

    @Test
    void aNonMemberSaysSoAtEveryCall() {
        ProcessGroup g = new NonMemberGroup(2, List.of(0, 1), "gloo");
        assertFalse(g.isMember());
        assertEquals(-1, Distributed.getRank(g));
        assertEquals(2, Distributed.getWorldSize(g));
        var e = assertThrows(IllegalStateException.class, () -> g.send(Tensor.zeros(1), 0));
        assertEquals("send: rank 2 is not a member of this group (default-group ranks [0, 1]); only members may call"
                + " its collectives: check group.isMember() first", e.getMessage());
        assertThrows(IllegalStateException.class, () -> g.reduceScatterTensor(Tensor.zeros(1), Tensor.zeros(2),
                ReduceOp.SUM));
    }
}
