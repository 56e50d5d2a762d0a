package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** kill -9 of a peer process in the middle of large shared-memory all-reduces. */
@Timeout(value = 180, unit = TimeUnit.SECONDS) // backstop above the bounded waits below
class ShmKillTest {
    private static final int TIMEOUT_SECONDS = 20;

    @Test
    void survivorThrowsNamingTheKilledRankWithinTheTimeout() throws Exception {
        int world = 2;
        int port = DistributedTest.freePort();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> processes = new ArrayList<>();
        List<BlockingQueue<String>> lines = new ArrayList<>();
        try {
            for (int rank = 0; rank < world; rank++) {
                ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp",
                        System.getProperty("java.class.path"), ShmKillMain.class.getName());
                Map<String, String> env = pb.environment();
                env.remove("DDP4J_AGENT_STORE");
                env.remove("DDP4J_SHM");
                env.remove("DDP4J_SHM_HOST_ID");
                env.put("MASTER_ADDR", "127.0.0.1");
                env.put("MASTER_PORT", Integer.toString(port));
                env.put("WORLD_SIZE", Integer.toString(world));
                env.put("RANK", Integer.toString(rank));
                env.put("DDP4J_TIMEOUT_SECONDS", Integer.toString(TIMEOUT_SECONDS));
                pb.redirectErrorStream(true);
                Process p = pb.start();
                processes.add(p);
                BlockingQueue<String> q = new LinkedBlockingQueue<>();
                lines.add(q);
                Thread reader = new Thread(() -> {
                    try (BufferedReader in = new BufferedReader(
                            new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                        for (String line; (line = in.readLine()) != null; ) {
                            q.add(line);
                        }
                    } catch (Exception ignored) {
                        // the process is gone
                    }
                    q.add("<eof>");
                });
                reader.setDaemon(true);
                reader.start();
            }
            StringBuilder seen = new StringBuilder();
            // Both ranks are on shared memory and in the all-reduce loop.
            for (int rank = 0; rank < world; rank++) {
                String line = waitFor(lines.get(rank), "looping rank=" + rank, 60, seen);
                assertTrue(line != null, "rank " + rank + " did not start looping within 60 s:\n" + seen);
            }
            assertTrue(seen.toString().contains("transport=shm rank=0"), seen.toString());
            Thread.sleep(200);
            processes.get(1).destroyForcibly(); // SIGKILL

            String caught = waitFor(lines.get(0), "caught rank=0", TIMEOUT_SECONDS + 10, seen);
            assertTrue(caught != null, "rank 0 did not fail within the timeout:\n" + seen);
            // The death is a fact: a PeerLostException (its reason and pid are checked in PeerKilledDuringBackwardTest).
            assertTrue(caught.contains("class=PeerLostException"), caught);
            assertTrue(caught.contains("rank 1"), "the message should name rank 1: " + caught);
            long ms = Long.parseLong(caught.replaceAll(".* ms=(\\d+) .*", "$1"));
            assertTrue(ms <= TIMEOUT_SECONDS * 1000L, "took " + ms + " ms: " + caught);
            assertTrue(processes.get(0).waitFor(30, TimeUnit.SECONDS), "rank 0 did not exit");
            assertEquals(0, processes.get(0).exitValue(), seen.toString());
        } finally {
            for (Process p : processes) {
                p.destroyForcibly();
            }
        }
    }

    /** The first line of {@code q} containing {@code text} within {@code seconds}, or null; every line read goes to {@code seen}. */
    private static String waitFor(BlockingQueue<String> q, String text, int seconds, StringBuilder seen)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            String line = q.poll(left, TimeUnit.NANOSECONDS);
            if (line == null) {
                return null;
            }
            seen.append(line).append('\n');
            if (line.contains(text)) {
                return line;
            }
        }
    }
}
