package org.ddp4j.benchmarks.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The runner's batch sizes (the same on every rank), its sizes and op names, its refusals, and its joining of JMH's JSON. */
class CollectiveBenchTest {

    @Test
    void batchesShrinkWithTheMessageAndStayWithinOneToTenThousand() {
        assertEquals(3000, CollectiveBench.callsPerIteration(0, 30));
        assertEquals(2999, CollectiveBench.callsPerIteration(8, 30)); // 30 ms over 10.002 us
        assertEquals(110, CollectiveBench.callsPerIteration(1 << 20, 30)); // 30 ms over 272 us
        assertEquals(3, CollectiveBench.callsPerIteration(32L << 20, 30)); // 30 ms over 8.40 ms: timed back to back
        assertEquals(1, CollectiveBench.callsPerIteration(128L << 20, 30));
        assertEquals(10_000, CollectiveBench.callsPerIteration(8, 10_000));
    }

    @Test
    void warmUpCoversASecondOfTheCallModelForLargeMessages() {
        // 32 MiB: 3 calls of 8.40 ms per iteration, 25.2 ms: 40 iterations make a second
        assertEquals(40, CollectiveBench.warmupIterations(32L << 20, 3, 2, 1000));
        // 128 MiB: one call of 33.6 ms: 30 iterations
        assertEquals(30, CollectiveBench.warmupIterations(128L << 20, 1, 2, 1000));
        // 8 B: 2999 calls of 10.002 us, 30.0 ms: 34 iterations
        assertEquals(34, CollectiveBench.warmupIterations(8, 2999, 2, 1000));
        // --warmup is a floor; --warmup-ms 0 leaves only it
        assertEquals(50, CollectiveBench.warmupIterations(32L << 20, 3, 50, 1000));
        assertEquals(2, CollectiveBench.warmupIterations(32L << 20, 3, 2, 0));
    }

    @Test
    void everyOpNameRunsItsBenchmarkClass() {
        assertEquals(AllReduceBenchmark.class, CollectiveBench.builtIn("allreduce"));
        assertEquals(BroadcastBenchmark.class, CollectiveBench.builtIn("broadcast"));
        assertEquals(AllGatherBenchmark.class, CollectiveBench.builtIn("allgather"));
        assertEquals(BarrierBenchmark.class, CollectiveBench.builtIn("barrier"));
        assertEquals(ReduceBenchmark.class, CollectiveBench.builtIn("reduce"));
        assertEquals(ReduceScatterBenchmark.class, CollectiveBench.builtIn("ReduceScatter"));
        assertEquals(SendRecvBenchmark.class, CollectiveBench.builtIn("sendrecv"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CollectiveBench.builtIn("gather"));
        assertEquals("unknown --op \"gather\": allreduce, broadcast, allgather, barrier, reduce, reducescatter or sendrecv;"
                + " or --benchmark your.CollectiveBenchmarkSubclass", e.getMessage());
    }

    @Test
    void sizesAreFourfoldStepsOrTheGivenListInBinaryUnits() {
        assertEquals(List.of(8L, 32L, 128L), CollectiveBench.messageSizes(8, 128, null));
        assertEquals(List.of(512L, 2048L), CollectiveBench.messageSizes(200, 4096, List.of()));
        assertEquals(List.of(8L, 1024L, 65_536L, 1L << 20, 32L << 20, 3L << 30),
                CollectiveBench.messageSizes(8, 8, List.of("8", "1K", "64k", "1M", " 32M", "3G")));
        for (String bad : List.of("0", "-8", "1.5M", "K", "64KB", "")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CollectiveBench.parseSize(bad));
            assertEquals("--sizes: \"" + bad + "\" is not a message size; give bytes (65536) or a whole number with K, M or G"
                    + " (64K), e.g. --sizes 8,1K,64K,1M,32M", e.getMessage());
        }
    }

    @Test
    void sendRecvRefusesAOneRankJobBeforeStartingJmh() {
        // No launcher here: WORLD_SIZE is unset, so the job is one rank.
        assertTrue(System.getenv("WORLD_SIZE") == null || System.getenv("WORLD_SIZE").equals("1"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CollectiveBench.run(SendRecvBenchmark.class, "--sizes", "8", "--forks", "0"));
        assertEquals("sendrecv needs at least 2 ranks (each rank sends to rank + 1 and receives from rank - 1, and a rank"
                + " cannot send to itself), but this job has 1 (WORLD_SIZE): launch it with scripts/ddp4j-run"
                + " --nproc-per-node 2 or more", e.getMessage());
        assertEquals(1, new ReduceBenchmark().minimumRanks());
    }

    @Test
    void jsonArraysOfEachSizeBecomeOneArray(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("sub/all.json");
        CollectiveBench.writeJson(out, List.of("[\n  {\"a\": 1}\n]\n", "[]", "[\n  {\"b\": [2]}\n]"));
        assertEquals("[\n{\"a\": 1},\n{\"b\": [2]}\n]\n", Files.readString(out));
    }
}
