package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Ranks as separate JVMs, rendezvous through env:// exactly as under the launcher. */
@Timeout(value = 180, unit = TimeUnit.SECONDS) // backstop above the 60 s wait per rank process
class MultiProcessTest {

    @Test
    void twoProcessesAllReduceThroughEnvInit() throws Exception {
        int world = 2;
        int port = DistributedTest.freePort();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> processes = new ArrayList<>();
        try {
            for (int rank = 0; rank < world; rank++) {
                ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp",
                        System.getProperty("java.class.path"), CollectiveCheckMain.class.getName());
                Map<String, String> env = pb.environment();
                env.remove("DDP4J_AGENT_STORE");
                env.put("MASTER_ADDR", "127.0.0.1");
                env.put("MASTER_PORT", Integer.toString(port));
                env.put("WORLD_SIZE", Integer.toString(world));
                env.put("RANK", Integer.toString(rank));
                env.put("DDP4J_TIMEOUT_SECONDS", "30");
                pb.redirectErrorStream(true);
                processes.add(pb.start());
            }
            for (int rank = 0; rank < world; rank++) {
                Process p = processes.get(rank);
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(10, TimeUnit.SECONDS); // then its output can be read to the end
                    fail("rank " + rank + " did not finish within 60 s; its output:\n"
                            + new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
                }
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertEquals(0, p.exitValue(), "rank " + rank + " output:\n" + out);
                assertTrue(out.contains("allreduce ok rank=" + rank + " sum=3"), out);
            }
        } finally {
            for (Process p : processes) {
                p.destroyForcibly();
            }
        }
    }
}
