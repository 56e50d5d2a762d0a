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
import org.junit.jupiter.api.io.TempDir;
import java.nio.file.Files;
import org.ddp4j.distributed.store.PrefixStore;
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
            String expected = "RANK 1 was claimed twice: by process A and by process B; give each process its own RANK"
                    + " in [0, 2), or start them with the launcher (scripts/ddp4j-run or org.ddp4j.launch.Launcher), which assigns the ranks";
            assertEquals(expected, second.get(60, TimeUnit.SECONDS));
            Future<String> rank0 = claim(pool, server, 0, 2, "process C");
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
            assertTrue(ps.get(1).waitFor(90, TimeUnit.SECONDS), "the second claimant did not exit");
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
                    + " started with WORLD_SIZE=(\\d) \\(from WORLD_SIZE, set by the launcher\\), rank (\\d) \\(pid (\\d+) on"
                    + " host \\S+ \\(127\\.0\\.0\\.1\\)\\) with WORLD_SIZE=(\\d) \\(from WORLD_SIZE, set by the launcher\\);"
                    + " start every process of the job with the same WORLD_SIZE");
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

    // ---- a second claimant of a rank of a job that is already running ----

    @Test
    void aRankOfARunningJobClaimedAgainFailsOnlyTheNewcomer() throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TcpStore server = TcpStore.server("127.0.0.1", 0, TIMEOUT);
                TcpStore a = TcpStore.client("127.0.0.1", server.port(), TIMEOUT);
                TcpStore b = TcpStore.client("127.0.0.1", server.port(), TIMEOUT)) {
            // ranks 0 and 1 finish their init and stay connected: a running job
            Future<?> rank0 = pool.submit(() -> InitKeySpace.enter(a, 0, 2, TIMEOUT, who("process A")));
            InitKeySpace.enter(b, 1, 2, TIMEOUT, who("process B"));
            rank0.get(60, TimeUnit.SECONDS);
            assertEquals("RANK 1 was claimed twice: by process B and by process C; give each process its own RANK in"
                    + " [0, 2), or start them with the launcher (scripts/ddp4j-run or org.ddp4j.launch.Launcher), which"
                    + " assigns the ranks", claim(pool, server, 1, 2, "process C").get(60, TimeUnit.SECONDS));
            // the job is unharmed: its next init meets as usual
            Future<?> again = pool.submit(() -> InitKeySpace.enter(a, 0, 2, TIMEOUT, who("process A")));
            assertTrue(InitKeySpace.enter(b, 1, 2, TIMEOUT, who("process B")) instanceof PrefixStore);
            again.get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aRankWhoseProcessHasExitedMayBeClaimedByANewOne() throws Exception {
        // A rank restarted in a new JVM: the old process's connection closed, so its claim went with it.
        try (TcpStore server = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            try (TcpStore old = TcpStore.client("127.0.0.1", server.port(), TIMEOUT)) {
                assertThrows(DistributedTimeoutException.class,
                        () -> InitKeySpace.enter(old, 1, 2, Duration.ofMillis(200), who("old process")));
            }
            try (TcpStore fresh = TcpStore.client("127.0.0.1", server.port(), TIMEOUT)) {
                var e = assertThrows(DistributedTimeoutException.class,
                        () -> InitKeySpace.enter(fresh, 1, 2, Duration.ofMillis(200), who("new process")));
                assertTrue(e.getMessage().startsWith("process group init #2 of rank 1: rank 0 (at init #0) did not"
                        + " reach it"), e.getMessage());
            }
        }
    }

    private static Process startBare(int port, int rank, int world, String... args) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp",
                System.getProperty("java.class.path"), InitClaimMain.class.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
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

    /** Waits until ranks 0..world-1 have finished init #1 under {@code prefix} of the store at {@code port}. */
    private static void awaitRunning(int port, String prefix, int world) throws Exception {
        try (TcpStore probe = TcpStore.client("127.0.0.1", port, Duration.ofSeconds(60))) {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            for (int r = 0; r < world; r++) {
                while (!probe.check(List.of(prefix + InitKeySpace.doneKey(1, r)))) {
                    assertTrue(System.nanoTime() < end, "rank " + r + " never finished its init");
                    Thread.sleep(20);
                }
            }
        }
    }

    /** Waits for a process that should succeed; returns its output. */
    private static String success(Process p) throws Exception {
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), "a rank did not exit");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    void aSecondRankOneStartedIntoARunningJobFailsNamingBothPidsAndTheJobGoesOn(@TempDir Path dir) throws Exception {
        List<Process> ps = new ArrayList<>();
        int port = LauncherProcess.freePort();
        Path go = dir.resolve("go");
        try {
            ps.add(startBare(port, 0, 2, "hold", go.toString()));
            ps.add(startBare(port, 1, 2, "hold", go.toString()));
            awaitRunning(port, "", 2);
            Process intruder = startBare(port, 1, 2);
            ps.add(intruder);
            String msg = failure(intruder);
            String expected = "RANK 1 was claimed twice: by pid " + ps.get(1).pid() + " on host \\S+ \\(127\\.0\\.0\\.1\\)"
                    + " and by pid " + intruder.pid() + " on host \\S+ \\(127\\.0\\.0\\.1\\); give each process its own"
                    + " RANK in \\[0, 2\\), or start them with the launcher \\(scripts/ddp4j-run or org\\.ddp4j\\.launch\\.Launcher\\), which assigns the ranks";
            assertTrue(msg.matches(expected), msg);
            Files.createFile(go);
            for (int r = 0; r < 2; r++) {
                String out = success(ps.get(r));
                assertTrue(out.contains("sum=3.0"), out);
            }
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }

    @Test
    void aBareProcessJoiningALauncherJobIsToldTheWorldSizeOrTheRankItDuplicates(@TempDir Path dir) throws Exception {
        int port = LauncherProcess.freePort();
        Path go = dir.resolve("go");
        Process launcher = LauncherProcess.start("--nproc-per-node", "2", "--master-port", Integer.toString(port),
                InitClaimMain.class.getName(), "hold", go.toString());
        List<Process> ps = new ArrayList<>();
        try {
            awaitRunning(port, LauncherJob.workerPrefix("0") + "/", 2);
            Process three = startBare(port, 1, 3);
            ps.add(three);
            String msg = failure(three);
            Matcher m = Pattern.compile("WORLD_SIZE mismatch: rank 1 \\(pid " + three.pid() + " on host \\S+ \\(127\\.0\\.0\\.1\\)\\)"
                    + " started with WORLD_SIZE=3 \\(from the environment variable WORLD_SIZE\\), but the store at 127\\.0\\.0\\.1:"
                    + port + " serves a job of the launcher \\(node 0's launcher, pid (\\d+) on host \\S+\\) whose world size is 2"
                    + " \\(the launcher's ranks: --nnodes 1, 2 worker\\(s\\)\\); start every process of the job with the same"
                    + " WORLD_SIZE, or let the launcher start them all \\(it sets WORLD_SIZE and RANK\\)").matcher(msg);
            assertTrue(m.matches(), msg);
            assertEquals(Long.toString(launcher.pid()), m.group(1));
            Process dup = startBare(port, 1, 2);
            ps.add(dup);
            msg = failure(dup);
            assertTrue(msg.matches("RANK 1 was claimed twice: by pid \\d+ on host \\S+ \\(127\\.0\\.0\\.1\\) and by pid "
                    + dup.pid() + " on host \\S+ \\(127\\.0\\.0\\.1\\); give each process its own RANK in \\[0, 2\\), .*"), msg);
            Files.createFile(go);
            LauncherProcess.Result r = LauncherProcess.finish(launcher);
            assertEquals(0, r.exitCode(), r.text());
            assertEquals(2, r.lines().stream().filter(l -> l.endsWith("sum=3.0")).count(), r.text());
        } finally {
            ps.forEach(Process::destroyForcibly);
            LauncherProcess.kill(launcher);
        }
    }
}
