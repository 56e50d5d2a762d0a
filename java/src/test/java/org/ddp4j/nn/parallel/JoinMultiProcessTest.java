package org.ddp4j.nn.parallel;

import org.ddp4j.testing.RankProcesses;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * DDP join (uneven inputs) and unused parameters with ranks as separate JVMs over env://, against
 * the single-process reference of {@link UnevenTraining}: the same arithmetic (per step, the sum
 * of the available ranks' gradients divided by the world size; no gradient for a parameter no
 * rank used) with SGD momentum and weight decay.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS) // per case; above the 90 s wait per process
class JoinMultiProcessTest {

    @ParameterizedTest(name = "join, batches {0}, heads {1}, DDP4J_SHM={2}")
    @CsvSource(delimiter = ';', value = {"3,4,5; unused; 1", "4,3; all; 0", "2,2; unused; 1", "0,3,1; unused; 0"})
    void unevenRanksFinishAndMatchTheReference(String batches, String heads, String shm) throws Exception {
        int[] counts = java.util.Arrays.stream(batches.split(",")).mapToInt(Integer::parseInt).toArray();
        List<String> outputs = runRanks("join", batches, heads, shm, 0);
        Map<String, float[]> reference = UnevenTraining.reference(counts, heads.equals("unused"));
        Map<String, float[]> initial = new java.util.TreeMap<>();
        new UnevenTraining.Heads().namedParameters().forEach((n, p) -> initial.put(n, p.toFloatArray()));
        for (int rank = 0; rank < counts.length; rank++) {
            String out = outputs.get(rank);
            for (Map.Entry<String, float[]> e : reference.entrySet()) {
                float[] got = parse(out, "param rank=" + rank + " " + e.getKey() + "=");
                float[] want = e.getValue();
                for (int k = 0; k < want.length; k++) {
                    assertEquals(want[k], got[k], 2e-6f * Math.max(1f, Math.abs(want[k])),
                            "rank " + rank + " " + e.getKey() + "[" + k + "]; output:\n" + out);
                }
            }
            // Head b is used on no rank: no gradient at any step, so momentum and weight decay never move it.
            assertArrayEquals(initial.get("b.weight"), parse(out, "param rank=" + rank + " b.weight="), out);
            assertArrayEquals(initial.get("b.bias"), parse(out, "param rank=" + rank + " b.bias="), out);
            for (int step = 0; step < counts[rank]; step++) {
                String nulls = line(out, "nullgrads rank=" + rank + " step=" + step + " ");
                boolean dUnused = heads.equals("unused") && step % 2 == 1;
                // c is used on rank 1 only: every rank gets rank 1's gradient / world while rank 1 trains.
                boolean cUnused = heads.equals("unused") && step >= counts[1];
                String expected = "[b.weight, b.bias" + (cUnused ? ", c.weight, c.bias" : "")
                        + (dUnused ? ", d.weight, d.bias" : "") + "]";
                assertEquals(expected, nulls.substring(nulls.indexOf('[')), out);
            }
        }
        // The other heads did move (the test can fail): c on rank 1's gradient alone.
        assertTrue(reference.get("c.weight")[0] != initial.get("c.weight")[0]);
    }

    /**
     * A model with buffers: each forward broadcasts them from the highest rank still training
     * (found by one small all-reduce), and at the end every rank holds the last joiner's state.
     */
    @ParameterizedTest(name = "join with BatchNorm, batches {0}")
    @CsvSource(delimiter = ';', value = {"2,5", "4,1,3"})
    void aModelWithBuffersEndsWithTheSameStateOnEveryRank(String batches) throws Exception {
        List<String> outputs = runRanks("joinbn", batches, "all", "1", 0);
        List<String> states = new ArrayList<>();
        for (int rank = 0; rank < outputs.size(); rank++) {
            String prefix = "state rank=" + rank + " ";
            List<String> lines = outputs.get(rank).lines().filter(l -> l.startsWith(prefix))
                    .map(l -> l.substring(prefix.length())).toList();
            assertEquals(9, lines.size(), outputs.get(rank)); // conv w, b; bn w, b, mean, var, count; linear w, b
            states.add(String.join("\n", lines));
        }
        for (int rank = 1; rank < states.size(); rank++) {
            assertEquals(states.get(0), states.get(rank), "rank " + rank + " ended with another state than rank 0");
        }
        String count = states.get(0).lines().filter(l -> l.contains("num_batches_tracked=")).findFirst().orElseThrow();
        int most = java.util.Arrays.stream(batches.split(",")).mapToInt(Integer::parseInt).max().orElseThrow();
        assertTrue(count.endsWith("=" + (float) most), "the last joiner's BatchNorm counted every step: " + count);
    }

    /**
     * Without join every rank fails suggesting it; also with every native message's words withheld
     * (DDP4J_TEST_NEUTRAL_MESSAGES): the hint comes from the failure's facts, not its words.
     */
    @ParameterizedTest(name = "no join, batches {0}, DDP4J_SHM={1}, neutral messages {2}")
    @CsvSource(delimiter = ';', value = {"3,4; 1; 0", "3,4,5; 0; 0", "3,4; 1; 1", "3,4,5; 0; 1"})
    void withoutJoinEveryRankFailsSuggestingJoin(String batches, String shm, String neutral) throws Exception {
        long start = System.nanoTime();
        int world = batches.split(",").length;
        List<String> outputs = RankProcesses.run(JoinMain.class, world, Map.of("DDP4J_TIMEOUT_SECONDS", "30",
                "DDP4J_SHM", shm, "DDP4J_TEST_NEUTRAL_MESSAGES", neutral), Duration.ofSeconds(90), rank -> 3,
                "nojoin", batches, "all");
        for (int rank = 0; rank < outputs.size(); rank++) {
            String failed = line(outputs.get(rank), "failed rank=" + rank + ": ");
            assertTrue(failed.contains("try (var join = ddp.join()) { ... }"), failed);
            assertTrue(neutral.equals("0") || failed.contains("native message withheld"), failed);
        }
        long seconds = (System.nanoTime() - start) / 1_000_000_000L;
        assertTrue(seconds < 85, "took " + seconds + " s");
    }

    private static List<String> runRanks(String mode, String batches, String heads, String shm, int expectedExit)
            throws Exception {
        return runRanks(mode, batches, heads, shm, rank -> expectedExit);
    }

    /** Starts one JVM per rank, waits for each (90 s), checks its exit code, returns the outputs. */
    private static List<String> runRanks(String mode, String batches, String heads, String shm,
            java.util.function.IntUnaryOperator expectedExit) throws Exception {
        int world = batches.split(",").length;
        return RankProcesses.run(JoinMain.class, world, Map.of("DDP4J_TIMEOUT_SECONDS", "30", "DDP4J_SHM", shm),
                Duration.ofSeconds(90), expectedExit, mode, batches, heads);
    }

    /**
     * Rank 0 runs out of batches and exits (without closing its group): rank 1's next backward fails at once,
     * saying so (on shared memory, rank 0's exit handler marked the segment; over Gloo only the connection
     * closed) and suggesting join.
     */
    @ParameterizedTest(name = "no join, rank 0 exits, DDP4J_SHM={0}, neutral messages {1}")
    @CsvSource({"1, 0", "0, 0", "0, 1"})
    void withoutJoinTheRankLeftAloneFailsSuggestingJoin(String shm, String neutral) throws Exception {
        List<String> outputs = RankProcesses.run(JoinMain.class, 2, Map.of("DDP4J_TIMEOUT_SECONDS", "30",
                "DDP4J_SHM", shm, "DDP4J_TEST_NEUTRAL_MESSAGES", neutral), Duration.ofSeconds(90),
                rank -> rank == 0 ? 0 : 3, "nojoin-exit", "3,4", "all");
        String failed = line(outputs.get(1), "failed rank=1: ");
        // Over TCP the exit mark tells an exit from a kill: the peer is lost, and exited.
        assertTrue(line(outputs.get(1), "failedfacts rank=1: ").startsWith("failedfacts rank=1: PeerLostException "),
                outputs.get(1));
        assertTrue(neutral.equals("1") || failed.contains(shm.equals("1") ? "rank 0 (pid " : "peer rank 0 may have died"),
                failed);
        assertTrue(!shm.equals("1") || failed.contains(") exited without closing its process group"), failed);
        assertTrue(failed.contains("try (var join = ddp.join()) { ... }"), failed);
        assertTrue(outputs.get(1).contains("nullgrads rank=1 step=2 "), outputs.get(1));
        assertTrue(!outputs.get(1).contains("nullgrads rank=1 step=3 "), "no step on a wrong gradient: " + outputs.get(1));
    }

    /**
     * Rank 0 has one batch and exits: rank 1 fails at its second forward, in the buckets' rebuild
     * (the first collective after the first backward), and that message suggests join too.
     */
    @Test
    void aRankThatLeavesAfterOneBatchGetsTheJoinHintAtTheNextForward() throws Exception {
        List<String> outputs = runRanks("nojoin-exit", "1,4", "all", "1", rank -> rank == 0 ? 0 : 3);
        String failed = line(outputs.get(1), "failed rank=1: ");
        assertTrue(failed.contains("try (var join = ddp.join()) { ... }"), failed);
    }

    /**
     * SyncBatchNorm's own collectives cannot be shadowed by the ranks that joined: the job fails at
     * once (no hang), and no rank is told to wrap the loop in join(), which it already is.
     */
    @Test
    void syncBatchNormInsideJoinFailsWithoutSuggestingJoin() throws Exception {
        List<String> outputs = runRanks("joinsyncbn", "2,4", "all", "1", rank -> 3);
        boolean explained = false;
        for (int rank = 0; rank < outputs.size(); rank++) {
            String failed = line(outputs.get(rank), "failed rank=" + rank + ": ");
            assertTrue(!failed.contains("wrap the training loop"), failed);
            explained |= failed.contains("SyncBatchNorm");
        }
        assertTrue(explained, "no rank named SyncBatchNorm: " + outputs);
    }

    /**
     * Uneven batches with a BatchNorm model and no join: rank 0 runs out of data and exits; rank 1's
     * next forward fails in DDP's buffer broadcast, and that failure suggests join too.
     */
    @ParameterizedTest(name = "no join, BatchNorm, DDP4J_SHM={0}")
    @CsvSource({"1", "0"})
    void unevenBatchesWithBatchNormSuggestJoinFromTheForward(String shm) throws Exception {
        List<String> outputs = runRanks("nojoinbn", "2,4", "all", shm, rank -> rank == 0 ? 0 : 3);
        String failed = line(outputs.get(1), "failed rank=1: ");
        assertTrue(failed.contains("try (var join = ddp.join()) { ... }"), failed);
        assertTrue(line(outputs.get(1), "failedfacts rank=1: ").startsWith("failedfacts rank=1: PeerLostException "),
                outputs.get(1));
    }

    /**
     * A timeout in SyncBatchNorm's statistics all-gather, and one inside join(), stay timeouts that
     * name the op and the rank waited for, with no "different collective" and no uneven-inputs hint.
     */
    @ParameterizedTest(name = "{0}, DDP4J_SHM={1}")
    @CsvSource({"syncbn-timeout, 1", "syncbn-timeout, 0", "join-timeout, 1", "join-timeout, 0"})
    void aTimeoutInSyncBatchNormOrJoinNamesTheOpAndThePeerWithoutAJoinHint(String mode, String shm) throws Exception {
        int world = 2;
        List<String> outputs = RankProcesses.run(JoinMain.class, world, Map.of("DDP4J_TIMEOUT_SECONDS", "3",
                "DDP4J_SHM", shm), Duration.ofSeconds(60), rank -> rank == 0 ? 3 : 0, mode, "1,3", "all");
        String failed = line(outputs.get(0), "failed rank=0: ");
        String facts = line(outputs.get(0), "failedfacts rank=0: ");
        assertTrue(facts.startsWith("failedfacts rank=0: DistributedTimeoutException waitedFor=1 op="),
                facts + "\n" + failed);
        assertTrue(!facts.endsWith("op=null"), facts);
        assertTrue(!failed.contains("different collective") && !failed.contains("ddp.join()")
                && !failed.contains("uneven inputs"), failed);
        // SyncBatchNorm names the layer; inside join() the op is the shadowed collective (the bucket
        // order's broadcast at the second forward, here).
        assertTrue(!mode.startsWith("syncbn") || failed.contains("SyncBatchNorm over 2 channels on rank 0"), failed);
        assertTrue(failed.contains(" timed out after 3 s"), failed);
    }

    private static String line(String out, String prefix) {
        return out.lines().filter(l -> l.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no line starting with \"" + prefix + "\" in:\n" + out));
    }

    private static float[] parse(String out, String prefix) {
        String[] parts = line(out, prefix).substring(prefix.length()).split(",");
        float[] v = new float[parts.length];
        for (int i = 0; i < parts.length; i++) {
            v[i] = Float.parseFloat(parts[i]);
        }
        return v;
    }
}
