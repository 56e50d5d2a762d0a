package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 10's scenario with ranks as separate JVMs (env:// as under the launcher): rank 0 in a DDP
 * backward, rank 1 all-reducing a metric, over shared memory (the default on one host) and plain
 * Gloo (DDP4J_SHM=0), 2 and 3 ranks. Every rank must fail with a DistributedException naming its
 * own call and the peer's, well within the group's timeout (90 s here).
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS) // per case; above the 80 s wait per process
class FingerprintMultiProcessTest {

    @ParameterizedTest(name = "DDP4J_SHM={0}, {1} ranks")
    @CsvSource({"1, 2", "0, 2", "1, 3", "0, 3"})
    void everyProcessFailsNamingBothCalls(String shm, int world) throws Exception {
        int port = DistributedTest.freePort();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> processes = new ArrayList<>();
        long start = System.nanoTime();
        try {
            for (int rank = 0; rank < world; rank++) {
                ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp",
                        System.getProperty("java.class.path"), FingerprintMismatchMain.class.getName());
                Map<String, String> env = pb.environment();
                env.remove("DDP4J_AGENT_STORE");
                env.put("MASTER_ADDR", "127.0.0.1");
                env.put("MASTER_PORT", Integer.toString(port));
                env.put("WORLD_SIZE", Integer.toString(world));
                env.put("RANK", Integer.toString(rank));
                env.put("DDP4J_TIMEOUT_SECONDS", "90");
                env.put("DDP4J_SHM", shm);
                pb.redirectErrorStream(true);
                processes.add(pb.start());
            }
            String bucket = "allReduce(AVG) of 71 float32 elements (#"; // 68 gradients, 2 used flags, training flag
            String metric = "allReduce(SUM) of 1 float32 element (#";
            for (int rank = 0; rank < world; rank++) {
                Process p = processes.get(rank);
                if (!p.waitFor(80, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                    fail("rank " + rank + " did not finish within 80 s; its output:\n"
                            + new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
                }
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertEquals(0, p.exitValue(), "rank " + rank + " output:\n" + out);
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
        } finally {
            for (Process p : processes) {
                p.destroyForcibly();
            }
        }
    }
}
