package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.ddp4j.testing.Cpus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ddp4j.multiprocessing.WorkerJvm;
import org.ddp4j.multiprocessing.Processes;

/** Runs the launcher in-process against real worker JVMs ({@link LaunchTestWorker}) and commands. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LauncherTest {

    private static final String WORKER = LaunchTestWorker.class.getName();

    @TempDir
    Path dir;

    /** What one launcher run returned and printed. */
    record Run(int code, String out, String err, long millis) {
        List<String> outLines() {
            return out.lines().collect(Collectors.toList());
        }
    }

    /** The environment the workers start from: no thread settings, fast small JVMs. */
    static Map<String, String> baseEnv() {
        Map<String, String> env = new HashMap<>(System.getenv());
        env.remove("OMP_NUM_THREADS");
        env.remove("OPENBLAS_NUM_THREADS");
        env.remove("CUDA_VISIBLE_DEVICES");
        env.put(WorkerJvm.JAVA_OPTS_ENV,
                "-Xshare:auto -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx64m '-Dddp4j.test.opt=a b'");
        return env;
    }

    static Run launch(Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        long t0 = System.nanoTime();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Launcher.run(env, o, e, args);
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        Run r = new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8), ms);
        System.out.println("--- launcher exit " + code + " after " + ms + " ms\n--- out:\n" + r.out() + "--- err:\n" + r.err());
        return r;
    }

    /** A node's launcher run on a pool thread, waited for at most 50 s; a hang fails naming the node. */
    private static Run finish(Future<Run> launcher, int node) throws Exception {
        try {
            return launcher.get(50, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("the launcher of node " + node + " did not finish within 50 s", e);
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static Map<String, String> parse(String text) {
        Map<String, String> m = new HashMap<>();
        for (String line : text.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                m.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        return m;
    }

    Map<String, String> workerEnv(int rank) throws IOException {
        return parse(Files.readString(dir.resolve("rank-" + rank)));
    }

    @Test
    void twoWorkersGetTorchrunEnvironmentAndPrefixedOutput() throws IOException {
        int port = freePort();
        Run r = launch(baseEnv(), "--nproc_per_node", "2", "--master-port", Integer.toString(port),
                WORKER, "env", dir.toString());
        assertEquals(0, r.code(), r.err());
        for (int rank = 0; rank < 2; rank++) {
            Map<String, String> env = workerEnv(rank);
            assertEquals(Integer.toString(rank), env.get("RANK"));
            assertEquals(Integer.toString(rank), env.get("LOCAL_RANK"));
            assertEquals("2", env.get("WORLD_SIZE"));
            assertEquals("2", env.get("LOCAL_WORLD_SIZE"));
            assertEquals("0", env.get("GROUP_RANK"));
            assertEquals("1", env.get("GROUP_WORLD_SIZE"));
            assertEquals("127.0.0.1", env.get("MASTER_ADDR"));
            assertEquals(Integer.toString(port), env.get("MASTER_PORT"));
            assertEquals("1", env.get("DDP4J_AGENT_STORE"));
            assertEquals("0", env.get("DDP4J_RESTART_COUNT"));
            assertEquals("null", env.get("OMP_NUM_THREADS"), "unlike torchrun, no OMP_NUM_THREADS=1");
            assertEquals("null", env.get("OPENBLAS_NUM_THREADS"));
            assertEquals(Integer.toString(Math.max(1, Cpus.allowed() / 2)), env.get("threads"),
                    "two workers share the node's CPUs");
            assertEquals("a b", env.get("prop"), "DDP4J_JAVA_OPTS reaches the worker JVM");

            String p = "[rank" + rank + "]: ";
            assertTrue(r.outLines().contains(p + "RANK=" + rank), r.out());
            assertTrue(r.outLines().contains(p + "WORLD_SIZE=2"), r.out());
            String hello = p + "hello on stderr from rank " + rank;
            assertTrue(r.err().lines().anyMatch(hello::equals), r.err());
        }
        assertFalse(r.out().contains("hello on stderr"), "stderr lines stay on stderr");
        for (String line : r.outLines()) {
            assertTrue(line.matches("\\[rank[01]\\]: [A-Za-z_0-9]+=.*"), "whole, prefixed line: " + line);
        }
        assertEquals(2 * (LaunchTestWorker.VARS.size() + 2), r.outLines().size(), r.out()); // + prop, threads
    }

    @Test
    void localRanksMapOntoTheLaunchersVisibleGpus() throws IOException {
        // A node that runs a pinned subset of GPUs: local rank r uses cuda:r, the r-th GPU of the
        // launcher's CUDA_VISIBLE_DEVICES, so ranks 0 and 1 land on physical GPUs 2 and 4.
        Map<String, String> env = baseEnv();
        env.put("CUDA_VISIBLE_DEVICES", "2,4");
        Run r = launch(env, "--nproc-per-node", "2", "--master-port", Integer.toString(freePort()),
                WORKER, "env", dir.toString());
        assertEquals(0, r.code(), r.err());
        assertEquals("2", workerEnv(0).get("gpu"));
        assertEquals("4", workerEnv(1).get("gpu"));
        assertEquals("2,4", workerEnv(1).get("CUDA_VISIBLE_DEVICES"));
    }

    @Test
    void failingWorkerStopsTheOthersAndIsNamed() throws IOException {
        Run r = launch(baseEnv(), "--nproc-per-node", "2", "--master-port", Integer.toString(freePort()),
                WORKER, "fail-rank1", dir.toString());
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("ddp4j-run: rank 1 (node 0, local rank 1) exited with code 3;"
                + " stopped the other 1 running worker(s)"), r.err());
        assertTrue(r.err().contains("[rank1]: rank 1 fails now"), r.err());
        assertTrue(r.millis() < 20_000, "took " + r.millis() + " ms");
        assertFalse(r.out().contains("woke up"), r.out());
        long pid = Long.parseLong(Files.readString(dir.resolve("pid-0")).trim());
        assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "rank 0 (pid " + pid + ") still runs");
    }

    /**
     * The root cause comes from the workers' error files: rank 1's own failure, though rank 0 (which
     * failed on rank 1) exited first; the same with every native message's words withheld.
     */
    @ParameterizedTest(name = "neutral native messages: {0}")
    @ValueSource(booleans = {false, true})
    void theRootCauseIsTheEarliestOwnFailureInTheErrorFiles(boolean neutral) throws IOException {
        Map<String, String> env = baseEnv();
        if (neutral) {
            env.put("DDP4J_TEST_NEUTRAL_MESSAGES", "1");
        }
        Run r = launch(env, "--nproc-per-node", "2", "--master-port", Integer.toString(freePort()),
                WORKER, "own-failure-then-consequence", dir.toString());
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("the job failed; root cause: rank 1 (node 0, local rank 1) failed:"
                + " IllegalStateException: rank 1's own failure; failed as a consequence: rank 0 (node 0, local rank 0)"
                + " exited with code 1"), r.err());
        assertTrue(r.err().contains("PeerLostException"), r.err());
        assertTrue(!neutral || r.err().contains("native message withheld"), r.err());
    }

    @Test
    void nodesWithUnevenCountsGetConsecutiveRanks() throws Exception {
        int port = freePort();
        Map<String, String> env0 = baseEnv();
        env0.put("OPENBLAS_NUM_THREADS", "7"); // a user setting the launcher keeps
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            // Node 1 first: it must wait for node 0 to serve the store.
            Future<Run> node1 = pool.submit(() -> launch(baseEnv(), "--nnodes", "2", "--node_rank", "1",
                    "--nproc-per-node", "1", "--master_addr", "127.0.0.1", "--master_port", Integer.toString(port),
                    "--rdzv-timeout", "40", WORKER, "env", dir.toString()));
            Future<Run> node0 = pool.submit(() -> launch(env0, "--nnodes", "2", "--node-rank", "0",
                    "--nproc-per-node", "2", "--master-port", Integer.toString(port), "--rdzv-timeout", "40",
                    WORKER, "env", dir.toString()));
            Run r0 = finish(node0, 0);
            Run r1 = finish(node1, 1);
            assertEquals(0, r0.code(), r0.err());
            assertEquals(0, r1.code(), r1.err());
        } finally {
            pool.shutdownNow();
        }
        List<String> files;
        try (var s = Files.list(dir)) {
            files = s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("rank-")).sorted()
                    .collect(Collectors.toList());
        }
        assertEquals(List.of("rank-0", "rank-1", "rank-2"), files);
        List<String> seenRanks = new ArrayList<>();
        for (int rank = 0; rank < 3; rank++) {
            Map<String, String> env = workerEnv(rank);
            seenRanks.add(env.get("RANK"));
            assertEquals("3", env.get("WORLD_SIZE"));
            assertEquals("2", env.get("GROUP_WORLD_SIZE"));
        }
        assertEquals(List.of("0", "1", "2"), seenRanks);
        Map<String, String> last = workerEnv(2);
        assertEquals("0", last.get("LOCAL_RANK"));
        assertEquals("1", last.get("LOCAL_WORLD_SIZE"));
        assertEquals("1", last.get("GROUP_RANK"));
        assertEquals("null", last.get("OMP_NUM_THREADS"), "one worker per node: no thread setting");
        Map<String, String> first = workerEnv(1);
        assertEquals("1", first.get("LOCAL_RANK"));
        assertEquals("2", first.get("LOCAL_WORLD_SIZE"));
        assertEquals("0", first.get("GROUP_RANK"));
        assertEquals("null", first.get("OMP_NUM_THREADS"));
        assertEquals("7", first.get("OPENBLAS_NUM_THREADS"), "the user's value passes through");
        assertEquals(Integer.toString(Cpus.allowed()), last.get("threads"), "one worker on node 1 takes its CPUs");
    }

    @Test
    void failureOnOneNodeStopsTheOtherNode() throws Exception {
        int port = freePort();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        Run r0;
        Run r1;
        try {
            Future<Run> node0 = pool.submit(() -> launch(baseEnv(), "--nnodes", "2", "--node-rank", "0",
                    "--master-port", Integer.toString(port), "--rdzv-timeout", "40", WORKER, "fail-rank1", dir.toString()));
            Future<Run> node1 = pool.submit(() -> launch(baseEnv(), "--nnodes", "2", "--node-rank", "1",
                    "--master-port", Integer.toString(port), "--rdzv-timeout", "40", WORKER, "fail-rank1", dir.toString()));
            r1 = finish(node1, 1);
            r0 = finish(node0, 0);
        } finally {
            pool.shutdownNow();
        }
        assertNotEquals(0, r1.code());
        assertTrue(r1.err().contains("rank 1 (node 1, local rank 0) exited with code 3"), r1.err());
        assertNotEquals(0, r0.code());
        assertTrue(r0.err().contains("node 0: rank 1 (node 1, local rank 0) exited with code 3;"
                + " stopped the 1 local worker(s)"), r0.err());
        assertTrue(r0.millis() < 30_000, "took " + r0.millis() + " ms");
        long pid = Long.parseLong(Files.readString(dir.resolve("pid-0")).trim());
        assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "rank 0 (pid " + pid + ") still runs");
    }

    @Test
    void javaWorkersSeeAnEmptyStdin() throws IOException {
        // The launcher keeps each worker's stdin pipe open as its lifeline; the worker's program must
        // still see end of file at once, as it did when the pipe was closed.
        Run r = launch(baseEnv(), "--master-port", Integer.toString(freePort()), WORKER, "stdin", dir.toString());
        assertEquals(0, r.code(), r.err());
        assertEquals(List.of("[rank0]: stdin bytes=0"), r.outLines());
        Run sh = launch(baseEnv(), "--master-port", Integer.toString(freePort()), "sh", "-c", "echo \"stdin bytes=$(wc -c)\"");
        assertEquals(0, sh.code(), sh.err());
        assertEquals(List.of("[rank0]: stdin bytes=0"), sh.outLines());
        assertEquals(List.of(), sh.err().lines().filter(l -> !l.startsWith(THREADS_LINE)).collect(Collectors.toList()),
                "the lifeline watcher of a command worker says nothing when all goes well");
    }

    @Test
    void restartsTheWorkerGroupAfterAFailure() throws IOException {
        Run r = launch(baseEnv(), "--nproc-per-node", "2", "--max-restarts", "1", "--master-port",
                Integer.toString(freePort()), WORKER, "fail-first-attempt", dir.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.err().contains("rank 1 (node 0, local rank 1) exited with code 3"), r.err());
        assertTrue(r.err().contains("restarting the worker group of node 0 (restart 1 of 1)"), r.err());
        assertTrue(r.outLines().contains("[rank0]: attempt 1 ok"), r.out());
        assertTrue(r.outLines().contains("[rank1]: attempt 1 ok"), r.out());
    }

    @Test
    void aFailureOnOneNodeRestartsBothNodes() throws Exception {
        int port = freePort();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        Run r0;
        Run r1;
        try {
            Future<Run> node0 = pool.submit(() -> launch(baseEnv(), "--nnodes", "2", "--node-rank", "0",
                    "--max-restarts", "2", "--master-port", Integer.toString(port), "--rdzv-timeout", "40",
                    WORKER, "fail-rank1-once", dir.toString()));
            Future<Run> node1 = pool.submit(() -> launch(baseEnv(), "--nnodes", "2", "--node-rank", "1",
                    "--max-restarts", "2", "--master-port", Integer.toString(port), "--rdzv-timeout", "40",
                    WORKER, "fail-rank1-once", dir.toString()));
            r1 = finish(node1, 1);
            r0 = finish(node0, 0);
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, r0.code(), r0.err());
        assertEquals(0, r1.code(), r1.err());
        assertTrue(r0.err().contains("node 0: rank 1 (node 1, local rank 0) exited with code 3"), r0.err());
        assertTrue(r0.err().contains("restarting the worker group of node 0 (restart 1 of 2)"), r0.err());
        assertTrue(r1.err().contains("restarting the worker group of node 1 (restart 1 of 2)"), r1.err());
        assertEquals(List.of("[rank0]: rank 0 sleeping", "[rank0]: attempt 1 ok"), r0.outLines());
        assertEquals(List.of("[rank1]: attempt 1 ok"), r1.outLines());
    }

    @Test
    void withoutRestartsTheFirstFailureIsFinal() throws IOException {
        Run r = launch(baseEnv(), "--nproc-per-node", "2", "--master-port", Integer.toString(freePort()),
                WORKER, "fail-first-attempt", dir.toString());
        assertEquals(1, r.code(), r.err());
        assertFalse(r.err().contains("restarting"), r.err());
        assertFalse(r.out().contains("attempt 1"), r.out());
    }

    @Test
    void rendezvousTimeoutNamesTheMissingNodes() throws IOException {
        Run r = launch(baseEnv(), "--nnodes", "3", "--node-rank", "0", "--master-port", Integer.toString(freePort()),
                "--rdzv-timeout", "1", WORKER, "env", dir.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains("node rank(s) 1, 2 of --nnodes 3 never joined"), r.err());
        assertTrue(r.millis() < 15_000, "took " + r.millis() + " ms");
        try (var s = Files.list(dir)) {
            assertEquals(0, s.count(), "no worker started");
        }
    }

    @Test
    void runsACommandThatIsNotAClass() throws IOException {
        Run r = launch(baseEnv(), "--nproc-per-node", "2", "--master-port", Integer.toString(freePort()),
                "sh", "-c", "echo \"rank=$RANK of $WORLD_SIZE\"; echo oops >&2; printf 'no newline'");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.outLines().contains("[rank0]: rank=0 of 2"), r.out());
        assertTrue(r.outLines().contains("[rank1]: rank=1 of 2"), r.out());
        assertTrue(r.outLines().contains("[rank1]: no newline"), r.out());
        assertTrue(r.err().lines().anyMatch(l -> l.equals("[rank0]: oops")), r.err());
    }

    @Test
    void doubleDashEndsTheOptionsAndWorkerOptionsPassThrough() throws IOException {
        Run r = launch(baseEnv(), "--master-port", Integer.toString(freePort()), "--",
                "sh", "-c", "echo \"args: $*\"", "sh", "--nproc-per-node", "5");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.outLines().contains("[rank0]: args: --nproc-per-node 5"), r.out());
    }

    @Test
    void aNameThatIsNeitherAClassNorACommandIsAUsageErrorNamingBoth() throws IOException {
        Run r = launch(baseEnv(), "--master-port", Integer.toString(freePort()), "/nonexistent/ddp4j-worker");
        assertEquals(2, r.code());
        assertTrue(r.err().contains("ddp4j-run: cannot start the workers: '/nonexistent/ddp4j-worker' is neither a class"
                + " on the launcher's class path"), r.err());

        Run typo = launch(baseEnv(), "--master-port", Integer.toString(freePort()), "org.ddp4j.examples.NoSuchDemo");
        assertEquals(2, typo.code());
        assertTrue(typo.err().contains("'org.ddp4j.examples.NoSuchDemo' is neither a class on"), typo.err());
        assertTrue(typo.err().contains("org.ddp4j.launch.Launcher"), typo.err());
    }

    @Test
    void aMainClassInTheDefaultPackageRunsAsAJavaWorker() throws IOException {
        Run r = launch(baseEnv(), "--nproc-per-node", "2", "--master-port", Integer.toString(freePort()),
                "DefaultPackageWorker", "x", "y");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.outLines().contains("[rank0]: default-package worker rank 0 args x y"), r.out());
        assertTrue(r.outLines().contains("[rank1]: default-package worker rank 1 args x y"), r.out());
    }

    @Test
    void theLauncherSaysOnceOnStderrHowManyThreadsEachWorkerGets() throws IOException {
        // baseEnv() has no thread settings; the test class path has slf4j-simple, but the line must not depend on it.
        int cpus = Cpus.allowed();
        Run r = launch(baseEnv(), "--nproc-per-node", "2", "--master-port", Integer.toString(freePort()), WORKER, "env",
                dir.toString());
        assertEquals(0, r.code(), r.err());
        assertEquals(List.of(THREADS_LINE + Math.max(1, cpus / 2) + " (" + cpus + " CPUs / 2 workers on this node;"
                + " set OMP_NUM_THREADS to choose)"), threadLines(r));
    }

    @Test
    void aUserSetOmpNumThreadsReachesTheWorkersAndWins() throws IOException {
        Map<String, String> env = baseEnv();
        env.put("OMP_NUM_THREADS", "3");
        Run r = launch(env, "--nproc-per-node", "2", "--master-port", Integer.toString(freePort()), WORKER, "env",
                dir.toString());
        assertEquals(0, r.code(), r.err());
        String over = 2 * 3 > Cpus.allowed() ? "; 2 x 3 threads oversubscribe the " + Cpus.allowed() + " CPUs" : "";
        assertEquals(List.of(THREADS_LINE + "3 (OMP_NUM_THREADS=3" + over + ")"), threadLines(r));
        for (int rank = 0; rank < 2; rank++) {
            assertEquals("3", workerEnv(rank).get("OMP_NUM_THREADS"));
            assertEquals("3", workerEnv(rank).get("threads"));
        }
    }

    /** The start of the launcher's line on the workers' intra-op threads. */
    private static final String THREADS_LINE = "ddp4j-run: intra-op threads per worker: ";

    private static List<String> threadLines(Run r) {
        return r.err().lines().filter(l -> l.startsWith(THREADS_LINE)).collect(Collectors.toList());
    }

    @Test
    void versionComesFromTheJarManifest() {
        Run r = launch(baseEnv(), "--version");
        assertEquals(0, r.code(), r.err());
        // Tests run from target/classes, which has no manifest: the development build.
        assertTrue(r.out().startsWith("ddp4j-run (development build), java "), r.out());
    }

    @Test
    void invalidFlagsGiveClearErrors() {
        Run r = launch(baseEnv(), "--nnodes", "2", "--node-rank", "2", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--node-rank 2 is out of range for --nnodes 2 (node ranks are 0..1)"), r.err());

        r = launch(baseEnv(), "--nproc_per_node=0", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--nproc-per-node must be at least 1, got 0"), r.err());

        r = launch(baseEnv(), "--nproc-per-node", "2");
        assertEquals(2, r.code());
        assertTrue(r.err().contains("missing MAIN_CLASS_OR_COMMAND"), r.err());

        r = launch(baseEnv(), "--master-port", "70000", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--master-port must be in 1..65535 (or 0 on a single node: a free port), got 70000"), r.err());

        r = launch(baseEnv(), "--no-such-flag", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--no-such-flag"), r.err());

        r = launch(baseEnv(), "--nnodes", "two", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--nnodes"), r.err());

        r = launch(baseEnv(), "--help");
        assertEquals(0, r.code());
        assertTrue(r.out().contains("--nproc-per-node"), r.out());
        assertTrue(r.out().contains("MAIN_CLASS_OR_COMMAND"), r.out());
    }

    @Test
    void keepAliveKnobsAreValidatedAndDocumented() {
        Run r = launch(baseEnv(), "--keepalive-interval", "5", "--keepalive-timeout", "6", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--keepalive-timeout (6 s) must be at least twice --keepalive-interval (5 s)"), r.err());

        Map<String, String> env = baseEnv();
        env.put(KeepAlive.TIMEOUT_ENV, "soon");
        r = launch(env, WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("DDP4J_KEEPALIVE_TIMEOUT must be a number of seconds, got 'soon'"), r.err());

        r = launch(baseEnv(), "--keepalive-interval", "0", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--keepalive-interval must be between 0.05 and 86400 seconds, got 0"), r.err());

        r = launch(baseEnv(), "--help");
        assertTrue(r.out().contains("--keepalive-interval=SECONDS"), r.out());
        assertTrue(r.out().contains("--keepalive-timeout=SECONDS"), r.out());
        assertTrue(r.out().contains("DDP4J_KEEPALIVE_TIMEOUT"), r.out());
    }

    @Test
    void sigtermToTheLauncherStopsTheWorkers() throws Exception {
        List<String> cmd = new ArrayList<>(List.of(WorkerJvm.javaExecutable(), "-cp",
                System.getProperty("java.class.path"), Launcher.class.getName(), "--nproc-per-node", "2",
                "--master-port", Integer.toString(freePort()), WORKER, "sleep", dir.toString()));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(dir.resolve("launcher.log").toFile());
        pb.environment().putAll(baseEnv());
        Process launcher = pb.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!(Files.exists(dir.resolve("pid-0")) && Files.exists(dir.resolve("pid-1")))) {
                assertTrue(launcher.isAlive(), Files.readString(dir.resolve("launcher.log")));
                assertTrue(System.nanoTime() < deadline, "workers did not start");
                Thread.sleep(20);
            }
            launcher.destroy(); // SIGTERM
            assertTrue(launcher.waitFor(15, TimeUnit.SECONDS), "the launcher did not exit");
            String log = Files.readString(dir.resolve("launcher.log"));
            assertTrue(log.contains("node 0 was asked to stop; stopping its workers"), log);
            for (int rank = 0; rank < 2; rank++) {
                long pid = Long.parseLong(Files.readString(dir.resolve("pid-" + rank)).trim());
                ProcessHandle h = ProcessHandle.of(pid).orElse(null);
                // The orphaned workers are reaped by init: allow a moment.
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (h != null && Processes.isRunning(h) && System.nanoTime() < until) {
                    Thread.sleep(20);
                }
                assertFalse(h != null && Processes.isRunning(h), "rank " + rank + " (pid " + pid + ") still runs");
            }
        } finally {
            launcher.destroyForcibly();
        }
    }

    @Test
    void portInUseOnNodeZeroIsReported() throws IOException {
        try (ServerSocket taken = new ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1"))) {
            Run r = launch(baseEnv(), "--master-port", Integer.toString(taken.getLocalPort()), WORKER, "env", dir.toString());
            assertEquals(1, r.code());
            assertTrue(r.err().contains("cannot serve the store on 127.0.0.1:" + taken.getLocalPort()), r.err());
        }
    }

    /** Round 3: kill -USR2 of a worker crashed its JVM (HotSpot's suspend/resume signal); now it asks for a dump. */
    @Test
    void sigusr2AsksAWorkerForADumpAndDoesNotCrashIt() throws Exception {
        java.nio.file.Path work = Files.createDirectories(dir.resolve("usr2"));
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            Future<Run> job = pool.submit(() -> launch(baseEnv(), "--nproc-per-node", "1", WORKER, "sleep", work.toString()));
            java.nio.file.Path pidFile = work.resolve("pid-0");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!Files.exists(pidFile) && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            long pid = Long.parseLong(Files.readString(pidFile).strip());
            assertEquals(0, new ProcessBuilder("kill", "-USR2", Long.toString(pid)).start().waitFor());
            Thread.sleep(1500);
            assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "the worker survived SIGUSR2");
            new ProcessBuilder("kill", "-TERM", Long.toString(pid)).start().waitFor();
            Run r = finish(job, 0);
            assertTrue(r.err().contains("SIGUSR2: this process has no process group yet"), r.err());
            assertTrue(!r.err().contains("hs_err") && !r.err().contains("SIGABRT"), r.err());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void twoSingleNodeJobsWithoutAPortPickTheirOwnAndDoNotCollide() throws Exception {
        java.nio.file.Path dirA = Files.createDirectories(dir.resolve("a"));
        java.nio.file.Path dirB = Files.createDirectories(dir.resolve("b"));
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            Future<Run> a = pool.submit(() -> launch(baseEnv(), "--nproc-per-node", "2", WORKER, "env", dirA.toString()));
            Future<Run> b = pool.submit(() -> launch(baseEnv(), "--standalone", "--nproc-per-node", "2", WORKER, "env",
                    dirB.toString()));
            Run ra = finish(a, 0);
            Run rb = finish(b, 0);
            assertEquals(0, ra.code(), ra.err());
            assertEquals(0, rb.code(), rb.err());
            String portA = parse(Files.readString(dirA.resolve("rank-1"))).get("MASTER_PORT");
            String portB = parse(Files.readString(dirB.resolve("rank-1"))).get("MASTER_PORT");
            assertTrue(!portA.equals(portB) && Integer.parseInt(portA) > 0 && Integer.parseInt(portB) > 0, portA + " " + portB);
            assertEquals(portA, parse(Files.readString(dirA.resolve("rank-0"))).get("MASTER_PORT"));
            assertTrue(ra.err().contains("ddp4j-run: the store listens on 127.0.0.1:" + portA + " (a free port"), ra.err());
            assertEquals("127.0.0.1", parse(Files.readString(dirB.resolve("rank-0"))).get("MASTER_ADDR"));
        } finally {
            pool.shutdownNow();
        }
        Run zero = launch(baseEnv(), "--master-port", "0", "--nproc-per-node", "1", WORKER, "env",
                Files.createDirectories(dir.resolve("z")).toString());
        assertEquals(0, zero.code(), zero.err());
        assertTrue(zero.err().contains("(a free port: --master-port 0 or none;"), "an explicit 0 is not 'no port given':\n"
                + zero.err());
        Run r = launch(baseEnv(), "--nnodes", "2", "--master-port", "0", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--master-port 0 (a port the launcher picks) works on a single node only"), r.err());
        r = launch(baseEnv(), "--standalone", "--nnodes", "2", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--standalone runs a single-node job, but --nnodes is 2"), r.err());
        r = launch(baseEnv(), "--standalone", "--master-port", "29555", WORKER);
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--standalone picks a free port itself; drop --master-port 29555"), r.err());
    }
}
