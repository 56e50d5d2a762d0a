package org.ddp4j.distributed;

import org.ddp4j.testing.RankProcesses;
import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * reduce, reduceScatter, send/recv and subgroups with ranks as separate JVMs (env://), over shared
 * memory (the default on one host) and plain Gloo (DDP4J_SHM=0): {@link CollectivesMain} checks
 * every value against its own arithmetic; here every rank must exit 0 having said so, and ranks
 * that disagree must each fail with a message naming both calls, well within the groups' timeout.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class CollectivesMultiProcessTest {

    @ParameterizedTest(name = "DDP4J_SHM={0}, {1} ranks")
    @CsvSource({"1, 4", "0, 3", "1, 2"})
    void valuesMatchTheArithmetic(String shm, int world) throws Exception {
        List<String> outputs = run("values", shm, world);
        for (int rank = 0; rank < world; rank++) {
            assertTrue(outputs.get(rank).contains("checks passed rank=" + rank), outputs.get(rank));
        }
    }

    @ParameterizedTest(name = "DDP4J_SHM={0}, {1} ranks")
    @CsvSource({"1, 3", "0, 2"})
    void disagreementsNameBothCalls(String shm, int world) throws Exception {
        long start = System.nanoTime();
        List<String> outputs = run("mismatch", shm, world);
        // The groups' timeout is 90 s; every case was caught without waiting for it.
        assertTrue(System.nanoTime() - start < 80_000_000_000L);
        for (int rank = 0; rank < world; rank++) {
            String out = outputs.get(rank);
            String root = line(out, "caught rank=" + rank + " case=reduce-root: ");
            String myRoot = rank == 1 ? "1" : "0";
            if (root.startsWith("shared memory: ")) {
                // On one host a rank may learn of the disagreement from the peer that found it first:
                // "shared memory: allGather of 40 bytes per rank abandoned: rank 0 (pid ..) failed: <its message>".
                assertTrue(root.contains(" abandoned: rank ") && root.contains("a peer called a different collective")
                        && root.contains("reduce(SUM) to rank 0") && root.contains("reduce(SUM) to rank 1"), root);
            } else {
                assertTrue(root.startsWith("reduce(SUM) to rank " + myRoot + " of 6 float32 elements (#1) on rank "
                        + rank + ": a peer called a different collective: rank "), root);
                assertTrue(root.contains(" called reduce(SUM) to rank " + (rank == 1 ? "0" : "1")
                        + " of 6 float32 elements (#1)."), root);
            }
            String kind = line(out, "caught rank=" + rank + " case=reducescatter-vs-allreduce: ");
            String reduceScatter = "reduceScatter(SUM) of " + 2 * world + " float32 elements (#1)";
            String allReduce = "allReduce(SUM) of " + 2 * world + " float32 elements (#1)";
            if (kind.startsWith("shared memory: ")) { // learnt from the peer that found it first, as above
                assertTrue(kind.contains(" abandoned: rank ") && kind.contains(reduceScatter) && kind.contains(allReduce),
                        kind);
            } else {
                assertTrue(kind.startsWith((rank == 0 ? reduceScatter : allReduce) + " on rank " + rank), kind);
                if (rank == 0) {
                    assertTrue(kind.contains(" called " + allReduce), kind);
                }
            }
            if (rank == 0) {
                String alone = line(out, "caught rank=0 case=newgroup-alone: ");
                assertTrue(alone.startsWith("newGroup([0, 1]) on rank 0 (group rank 0): rank 1 of 2 did not join within 2"),
                        alone);
                assertTrue(alone.contains("(seen from rank 0, store: "), alone);
                assertTrue(alone.contains("): is it not calling newGroup with these ranks? Ranks in"), alone);
                assertFalse(alone.contains("MASTER_ADDR"), alone);
                assertTrue(alone.contains("Ranks in this message are group ranks: group rank r is rank [0, 1][r] of the"
                        + " default group. Every member must call newGroup with the same ranks, and as often (call #"),
                        alone);
            }
            if (rank < 2) {
                String p2p = line(out, "caught rank=" + rank + " case=send-recv-size: ");
                String send = "send #1 to rank 1 with tag 3 of 10 float32 elements";
                String recv = "recv #1 from rank 0 with tag 3 of 12 float32 elements";
                assertEquals((rank == 0 ? send : recv) + " on rank " + rank + ": rank " + (1 - rank)
                        + "'s matching call is " + (rank == 0 ? recv : send) + ". A send and the recv that takes it"
                        + " must name each other's rank and the same tag, and pass tensors of the same dtype and number"
                        + " of elements; sends from one rank to another with one tag are received in the order they were"
                        + " sent. Nothing was transferred (" + (rank == 0 ? "the receiver's" : "this") + " tensor is"
                        + " unchanged)", p2p);
            }
        }
    }

    private static String line(String out, String prefix) {
        return out.lines().filter(l -> l.startsWith(prefix)).map(l -> l.substring(prefix.length())).findFirst()
                .orElseThrow(() -> new AssertionError("no line \"" + prefix + "\" in:\n" + out));
    }

    /** Runs CollectivesMain on {@code world} JVMs; fails unless each exits 0 within 150 s. Returns their outputs. */
    private static List<String> run(String mode, String shm, int world) throws Exception {
        return RankProcesses.run(CollectivesMain.class, world, Map.of("DDP4J_TIMEOUT_SECONDS", "90", "DDP4J_SHM", shm),
                Duration.ofSeconds(150), rank -> 0, mode);
    }
}
