package org.ddp4j.distributed;

import org.ddp4j.testing.RankProcesses;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The mismatched-collective scenario with ranks as separate JVMs (env:// as under the launcher): rank 0 in a DDP
 * backward, rank 1 all-reducing a metric, over shared memory (the default on one host) and plain
 * Gloo (DDP4J_SHM=0), 2 and 3 ranks. Every rank must fail with a DistributedException naming its
 * own call and the peer's, well within the group's timeout (90 s here).
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS) // per case; above the 80 s wait per process
class FingerprintMultiProcessTest {

    @ParameterizedTest(name = "DDP4J_SHM={0}, {1} ranks")
    @CsvSource({"1, 2", "0, 2", "1, 3", "0, 3"})
    void everyProcessFailsNamingBothCalls(String shm, int world) throws Exception {
        long start = System.nanoTime();
        List<String> outputs = RankProcesses.run(FingerprintMismatchMain.class, world,
                Map.of("DDP4J_TIMEOUT_SECONDS", "90", "DDP4J_SHM", shm), Duration.ofSeconds(80), rank -> 0);
        String bucket = "allReduce(AVG) of 71 float32 elements (#"; // 68 gradients, 2 used flags, training flag
        String metric = "allReduce(SUM) of 1 float32 element (#";
        for (int rank = 0; rank < world; rank++) {
            String out = outputs.get(rank);
            String line = out.lines().filter(l -> l.startsWith("mismatch caught")).findFirst().orElse(out);
            String mine = rank == 1 ? metric : bucket;
            String theirs = rank == 1 ? "rank 0" : "rank 1";
            assertTrue(line.startsWith("mismatch caught rank=" + rank + ": " + mine), line);
            assertTrue(line.contains("a peer called a different collective: " + theirs), line);
            assertTrue(line.contains(" called " + (rank == 1 ? bucket : metric)), line);
            assertTrue(line.contains("DDP bucket 1 of 1)"), line);
        }
        // JVM start-up included; the group's timeout (90 s) was never waited for.
        long seconds = (System.nanoTime() - start) / 1_000_000_000L;
        assertTrue(seconds < 80, "took " + seconds + " s");
    }
}
