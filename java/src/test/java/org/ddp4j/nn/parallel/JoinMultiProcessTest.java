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

    @ParameterizedTest(name = "no join, batches {0}, DDP4J_SHM={1}")
    @CsvSource(delimiter = ';', value = {"3,4; 1", "3,4,5; 0"})
    void withoutJoinEveryRankFailsSuggestingJoin(String batches, String shm) throws Exception {
        long start = System.nanoTime();
        List<String> outputs = runRanks("nojoin", batches, "all", shm, 3);
        for (int rank = 0; rank < outputs.size(); rank++) {
            String failed = line(outputs.get(rank), "failed rank=" + rank + ": ");
            assertTrue(failed.contains("try (var join = ddp.join()) { ... }"), failed);
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
    @ParameterizedTest(name = "no join, rank 0 exits, DDP4J_SHM={0}")
    @CsvSource({"1", "0"})
    void withoutJoinTheRankLeftAloneFailsSuggestingJoin(String shm) throws Exception {
        List<String> outputs = runRanks("nojoin-exit", "3,4", "all", shm, rank -> rank == 0 ? 0 : 3);
        String failed = line(outputs.get(1), "failed rank=1: ");
        assertTrue(failed.contains(shm.equals("1") ? "rank 0 (pid " : "peer rank 0 may have died"), failed);
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
