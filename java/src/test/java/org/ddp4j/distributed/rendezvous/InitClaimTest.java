package org.ddp4j.distributed.rendezvous;

import static org.junit.jupiter.api.Assertions.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ddp4j.testing.LauncherProcess;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.distributed.store.TcpStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;

/** A duplicated RANK and a mismatched WORLD_SIZE fail promptly, naming both claims (InitKeySpace). */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class InitClaimTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** "Well within the timeout": a third of it. */
    private static final long PROMPT_MS = TIMEOUT.toMillis() / 3;

    private static ProcessIdentity who(String name) {
        return new ProcessIdentity(name + "-token", name);
    }

    /** Runs InitKeySpace.enter for one claimant on its own connection; returns the failure message (or "ok"). */
    private static Future<String> claim(ExecutorService pool, TcpStore server, int rank, int world, String name) {
        return pool.submit(() -> {
            try (TcpStore mine = TcpStore.client("127.0.0.1", server.port(), TIMEOUT)) {
                long t0 = System.nanoTime();
                try {
                    InitKeySpace.enter(mine, rank, world, TIMEOUT, who(name));
                    return "ok";
                } catch (DistributedException e) {
                    long ms = (System.nanoTime() - t0) / 1_000_000;
                    assertTrue(ms < PROMPT_MS, name + " failed only after " + ms + " ms: " + e.getMessage());
                    return e.getMessage();
                }
            }
        });
    }

    private static void awaitCounter(Store store, String key, long value) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (store.add(key, 0) < value) {
            assertTrue(System.nanoTime() < end, key + " never reached " + value);
            Thread.sleep(20);
        }
    }

    @Test
    void aRankClaimedTwiceFailsEveryoneNamingBothClaims() throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TcpStore server = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            Future<String> first = claim(pool, server, 1, 2, "process A");
            awaitCounter(server, InitKeySpace.countKey(1), 1);
            Future<String> second = claim(pool, server, 1, 2, "process B");
            awaitCounter(server, InitKeySpace.countKey(1), 2);
            Future<String> rank0 = claim(pool, server, 0, 2, "process C");
            String expected = "RANK 1 was claimed twice: by process A and by process B; give each process its own RANK"
                    + " in [0, 2), or start them with the launcher (scripts/ddp4j-run or org.ddp4j.launch.Launcher), which assigns the ranks";
            assertEquals(expected, second.get(60, TimeUnit.SECONDS));
            assertEquals(expected, first.get(60, TimeUnit.SECONDS));
            assertEquals(expected, rank0.get(60, TimeUnit.SECONDS));
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void ranksWithDifferentWorldSizesFailNamingBoth() throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TcpStore server = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            Future<String> rank0 = claim(pool, server, 0, 2, "process A");
            awaitCounter(server, InitKeySpace.countKey(0), 1);
            Future<String> rank1 = claim(pool, server, 1, 3, "process B");
            String expected = "WORLD_SIZE mismatch: rank 0 (process A) started with WORLD_SIZE=2, rank 1 (process B)"
                    + " with WORLD_SIZE=3; start every process of the job with the same WORLD_SIZE";
            assertEquals(expected, rank1.get(60, TimeUnit.SECONDS));
            assertEquals(expected, rank0.get(60, TimeUnit.SECONDS));
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void theSameProcessMayRetryAnInitThatFailed() throws Exception {
        // A process whose first init failed (its peer never came) tries again: that is not a second claimant.
        try (TcpStore server = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            ProcessIdentity me = who("retrying process");
            assertThrows(DistributedTimeoutException.class,
                    () -> InitKeySpace.enter(server, 1, 2, Duration.ofMillis(200), me));
            var e = assertThrows(DistributedTimeoutException.class,
                    () -> InitKeySpace.enter(server, 1, 2, Duration.ofMillis(200), me));
            assertTrue(e.getMessage().startsWith("process group init #2 of rank 1: rank 0 (at init #0) did not reach it"),
                    e.getMessage());
            assertFalse(e.getMessage().contains("claimed twice"), e.getMessage());
        }
    }

    // ---- the same through env://, one JVM per claimant, as users start them ----

    private static Process start(TcpStore agent, int rank, int world) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp",
                System.getProperty("java.class.path"), InitClaimMain.class.getName());
        Map<String, String> env = pb.environment();
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", Integer.toString(agent.port()));
        env.put("WORLD_SIZE", Integer.toString(world));
        env.put("RANK", Integer.toString(rank));
        env.put("DDP4J_AGENT_STORE", "1"); // the test hosts the store, as the launcher does
        env.put("DDP4J_TIMEOUT_SECONDS", Long.toString(TIMEOUT.toSeconds()));
        pb.redirectErrorStream(true);
        return pb.start();
    }

    /** Waits for the process; returns its output, asserting it failed promptly. */
    private static String failure(Process p) throws Exception {
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), "a claimant did not exit");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(2, p.exitValue(), out);
        Matcher m = Pattern.compile("init failed after (\\d+) ms: (.*)").matcher(out);
        assertTrue(m.find(), out);
        assertTrue(Long.parseLong(m.group(1)) < PROMPT_MS, "failed only after " + m.group(1) + " ms: " + out);
        return m.group(2);
    }

    @Test
    void twoProcessesStartedWithTheSameRankBothFailNamingBothPids() throws Exception {
        List<Process> ps = new ArrayList<>();
        try (TcpStore agent = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            ps.add(start(agent, 1, 2));
            awaitCounter(agent, "ddp4j/worker/0/" + InitKeySpace.countKey(1), 1);
            ps.add(start(agent, 1, 2));
            awaitCounter(agent, "ddp4j/worker/0/" + InitKeySpace.countKey(1), 2);
            ps.add(start(agent, 0, 2));
            String expected = "RANK 1 was claimed twice: by pid " + ps.get(0).pid() + " on host \\S+ \\(127\\.0\\.0\\.1\\)"
                    + " and by pid " + ps.get(1).pid() + " on host \\S+ \\(127\\.0\\.0\\.1\\); give each process its own"
                    + " RANK in \\[0, 2\\), or start them with the launcher \\(scripts/ddp4j-run or org\\.ddp4j\\.launch\\.Launcher\\), which assigns the ranks";
            for (Process p : ps) {
                String msg = failure(p);
                assertTrue(msg.matches(expected), msg);
            }
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }

    @Test
    void aSecondRankZeroFindsTheFirstOnThePortAndBothFail() throws Exception {
        // Without the launcher rank 0 hosts the store: the second rank 0 finds the port taken by the first.
        List<Process> ps = new ArrayList<>();
        int port = LauncherProcess.freePort();
        try {
            ps.add(startHosting(port, 0, 2));
            try (TcpStore probe = TcpStore.client("127.0.0.1", port, Duration.ofSeconds(60))) {
                awaitCounter(probe, InitKeySpace.countKey(0), 1);
                while (!probe.check(List.of(InitKeySpace.claimKey(1, 0)))) {
                    Thread.sleep(20);
                }
            }
            ps.add(startHosting(port, 0, 2));
            String expected = "RANK 0 was claimed twice: by pid " + ps.get(0).pid() + " on host \\S+ \\(127\\.0\\.0\\.1\\),"
                    + " which hosts the store at 127\\.0\\.0\\.1:" + port + ", and by pid " + ps.get(1).pid()
                    + " on host \\S+ \\(127\\.0\\.0\\.1\\); give each process its own RANK, or start them with"
                    + " the launcher \\(scripts/ddp4j-run or org\\.ddp4j\\.launch\\.Launcher\\), which assigns the ranks";
            for (Process p : List.of(ps.get(1), ps.get(0))) {
                String msg = failure(p);
                assertTrue(msg.matches(expected), msg);
            }
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }

    private static Process startHosting(int port, int rank, int world) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp",
                System.getProperty("java.class.path"), InitClaimMain.class.getName());
        Map<String, String> env = pb.environment();
        env.remove("DDP4J_AGENT_STORE");
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", Integer.toString(port));
        env.put("WORLD_SIZE", Integer.toString(world));
        env.put("RANK", Integer.toString(rank));
        env.put("DDP4J_TIMEOUT_SECONDS", Long.toString(TIMEOUT.toSeconds()));
        pb.redirectErrorStream(true);
        return pb.start();
    }

    @Test
    void processesStartedWithWorldSizesTwoAndThreeBothFailNamingBoth() throws Exception {
        List<Process> ps = new ArrayList<>();
        try (TcpStore agent = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            ps.add(start(agent, 0, 2));
            ps.add(start(agent, 1, 3));
            Pattern expected = Pattern.compile("WORLD_SIZE mismatch: rank (\\d) \\(pid (\\d+) on host \\S+ \\(127\\.0\\.0\\.1\\)\\)"
                    + " started with WORLD_SIZE=(\\d), rank (\\d) \\(pid (\\d+) on host \\S+ \\(127\\.0\\.0\\.1\\)\\) with"
                    + " WORLD_SIZE=(\\d); start every process of the job with the same WORLD_SIZE");
            String first = failure(ps.get(0));
            assertEquals(first, failure(ps.get(1)));
            Matcher m = expected.matcher(first);
            assertTrue(m.matches(), first);
            // both claims, each with its own rank, pid and size, whichever came first
            int a = Integer.parseInt(m.group(1));
            int b = Integer.parseInt(m.group(4));
            assertEquals(1, a + b);
            assertEquals(Long.toString(ps.get(a).pid()), m.group(2));
            assertEquals(Long.toString(ps.get(b).pid()), m.group(5));
            assertEquals(Integer.toString(a + 2), m.group(3));
            assertEquals(Integer.toString(b + 2), m.group(6));
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }
}
