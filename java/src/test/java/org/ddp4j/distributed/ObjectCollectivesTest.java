package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;

/**
 * Object collectives on 3 ranks (threads with their own groups): each rank's object arrives intact
 * on the ranks it should, and bad input fails every rank alike, at once, naming the rank.
 */
class ObjectCollectivesTest {
    private static final int WORLD = 3;
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /** A rank's state, as a checkpoint would gather it: sizes differ between ranks. */
    record RankState(int rank, long[] generator, Map<String, Double> metrics) implements Serializable {
        @Override
        public boolean equals(Object o) {
            return o instanceof RankState s && s.rank == rank && Arrays.equals(s.generator, generator)
                    && s.metrics.equals(metrics);
        }

        @Override
        public int hashCode() {
            return rank;
        }
    }

    private static RankState stateOf(int rank) {
        long[] generator = new long[1 + 40 * rank]; // rank 2's object is the largest: buffers sized by the longest
        Arrays.fill(generator, 1000L * rank + 7);
        return new RankState(rank, generator, Map.of("loss", 0.5 + rank, "rank", (double) rank));
    }

    @Test
    void everyRankGetsEveryRanksObjectInRankOrder() throws Exception {
        List<List<RankState>> got = Ranks.withGroups(WORLD, TIMEOUT,
                (rank, g) -> ObjectCollectives.allGatherObject(g, stateOf(rank)));
        for (int rank = 0; rank < WORLD; rank++) {
            assertEquals(List.of(stateOf(0), stateOf(1), stateOf(2)), got.get(rank), "rank " + rank);
        }
    }

    @Test
    void gatherGivesTheListToDstOnly() throws Exception {
        List<List<String>> got = Ranks.withGlooGroups(WORLD, TIMEOUT,
                (rank, g) -> ObjectCollectives.gatherObject(g, rank == 1 ? null : "rank " + rank, 2));
        assertNull(got.get(0));
        assertNull(got.get(1));
        assertEquals(Arrays.asList("rank 0", null, "rank 2"), got.get(2));
    }

    @Test
    void broadcastReplacesTheListsElementsAndScatterGivesEachRankItsOwn() throws Exception {
        List<String> got = Ranks.withGroups(WORLD, TIMEOUT, (rank, g) -> {
            List<Object> objects = new ArrayList<>(Arrays.asList("mine " + rank, rank));
            ObjectCollectives.broadcastObjectList(g, objects, 1);
            String scattered = ObjectCollectives.scatterObjectList(g, rank == 0 ? List.of("a", "bb", "ccc") : null, 0);
            return objects + " " + scattered;
        });
        assertEquals(List.of("[mine 1, 1] a", "[mine 1, 1] bb", "[mine 1, 1] ccc"), got);
    }

    @Test
    void badInputFailsEveryRankNamingTheRank() throws Exception {
        // An object over the cap on rank 1: every rank refuses, naming rank 1 and the size, before the bytes move.
        List<String> tooLarge = Ranks.withGroups(WORLD, TIMEOUT, (rank, g) -> assertThrows(
                IllegalArgumentException.class,
                () -> ObjectCollectives.allGatherObject(g, rank == 1 ? new long[1000] : new long[1], 1024)).getMessage());
        for (String m : tooLarge) {
            assertTrue(m.startsWith("allGatherObject: rank 1's object takes ") && m.contains("DDP4J_OBJECT_MAX_BYTES=1024"), m);
        }
        // Not serializable on rank 2.
        List<String> notSerializable = Ranks.withGroups(WORLD, TIMEOUT, (rank, g) -> assertThrows(
                IllegalArgumentException.class, () -> ObjectCollectives.allGatherObject(g,
                        rank == 2 ? new ArrayList<Object>(List.of(new Object())) : new ArrayList<Object>())).getMessage());
        for (String m : notSerializable) {
            assertTrue(m.startsWith("allGatherObject: rank 2's object cannot be serialized"), m);
        }
        // A scatter list without one object per rank: every rank refuses.
        List<String> scatter = Ranks.withGroups(WORLD, TIMEOUT, (rank, g) -> assertThrows(
                IllegalArgumentException.class,
                () -> ObjectCollectives.scatterObjectList(g, List.of("only", "two"), 0)).getMessage());
        for (String m : scatter) {
            assertTrue(m.startsWith("scatterObjectList: rank 0's list does not hold one object per rank (3)"), m);
        }
        // Lists of different sizes: the receivers that differ say so.
        List<String> sizes = Ranks.withGroups(WORLD, TIMEOUT, (rank, g) -> {
            List<Object> objects = new ArrayList<>(rank == 2 ? List.of(1, 2, 3) : List.of(1, 2));
            try {
                ObjectCollectives.broadcastObjectList(g, objects, 0);
                return "ok";
            } catch (IllegalArgumentException e) {
                return e.getMessage();
            }
        });
        assertEquals("ok", sizes.get(0));
        assertEquals("ok", sizes.get(1));
        assertTrue(sizes.get(2).startsWith("broadcastObjectList: rank 0 sent 2 objects but this rank's (2) list has 3"),
                sizes.get(2));
    }
}
