package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ddp4j.multiprocessing.WorkerJvm;
import org.ddp4j.multiprocessing.Processes;
import org.ddp4j.testing.LauncherJobs;

/**
 * Liveness between nodes with the default keep-alive (1 s interval, 20 s timeout): two launchers
 * on loopback as separate processes, each with one worker that all-reduces through Gloo
 * ({@link LaunchTestWorker} {@code train}), killed or stopped in the ways real jobs fail.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class LivenessTest {

    private static final String WORKER = LaunchTestWorker.class.getName();

    /** The bound of the issue: the surviving launchers stop within 30 s of a launcher's kill -9. */
    private static final long STOP_BOUND_S = 30;

    @TempDir
    Path dir;

    private final List<Process> launchers = new ArrayList<>();
    private final int port = freePortOrFail();

    private static int freePortOrFail() {
        try {
            return LauncherTest.freePort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Starts node {@code node}'s launcher as its own JVM, output (both streams) in {@code launcher-N.log}. */
    private Process start(int node, String mode, int steps) throws IOException {
        return start(node, 2, WORKER, mode, dir.toString(), Integer.toString(steps));
    }

    /** Starts node {@code node} of {@code nnodes} running {@code worker}. */
    private Process start(int node, int nnodes, String... worker) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(WorkerJvm.javaExecutable(), "-cp",
                System.getProperty("java.class.path"), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx96m",
                Launcher.class.getName(), "--nnodes", Integer.toString(nnodes), "--node-rank", Integer.toString(node),
                "--master-port", Integer.toString(port), "--rdzv-timeout", "60"));
        cmd.addAll(List.of(worker));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log(node).toFile());
        Map<String, String> env = pb.environment();
        env.clear();
        env.putAll(LauncherTest.baseEnv());
        env.remove(KeepAlive.INTERVAL_ENV); // the defaults are what is tested
        env.remove(KeepAlive.TIMEOUT_ENV);
        Process p = pb.start();
        launchers.add(p);
        return p;
    }

    private static boolean running(long pid) {
        return ProcessHandle.of(pid).map(Processes::isRunning).orElse(false);
    }

    private Path awaitFile(String name) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Path f = dir.resolve(name);
        while (!Files.exists(f)) {
            assertTrue(System.nanoTime() < deadline, name + " did not appear within 60 s:" + logs());
            Thread.sleep(50);
        }
        return f;
    }

    private long awaitPidFile(String name) throws Exception {
        return Long.parseLong(Files.readString(awaitFile(name)).trim());
    }

    private void assertGoneWithin(long pid, long seconds, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (running(pid) && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertFalse(running(pid), what + " (pid " + pid + ") still runs " + seconds + " s later:" + logs());
    }

    /** Waits for {@code p} at most {@code seconds}; returns the seconds it took from {@code since}. */
    private double awaitExit(Process p, long seconds, long since, String what) throws Exception {
        assertTrue(p.waitFor(seconds, TimeUnit.SECONDS), what + " did not exit within " + seconds + " s:" + logs());
        double took = (System.nanoTime() - since) / 1e9;
        System.out.printf("%s exited with %d after %.1f s%n", what, p.exitValue(), took);
        return took;
    }

    @Test
    void killingTheNonMasterLauncherStopsNodeZeroAndNodeOnesWorker() throws Exception {
        Process node0 = start(0, "train", 600);
        Process node1 = start(1, "train", 600);
        long[] pids = LauncherJobs.awaitPids(dir, 2, launchers, this::logs);
        long t0 = System.nanoTime();
        node1.destroyForcibly(); // kill -9 of node 1's launcher
        assertGoneWithin(pids[1], 5, "node 1's worker, whose launcher was killed,");
        double took = awaitExit(node0, STOP_BOUND_S, t0, "node 0's launcher");
        assertNotEquals(0, node0.exitValue(), logs());
        String log0 = logText(0);
        assertTrue(log0.lines().anyMatch(l -> l.startsWith("ddp4j-run: node 0: ")
                && l.contains("lost node 1 (127.0.0.1): no keep-alive for 20 s")), logs());
        assertTrue(log0.contains("root cause: lost node 1 (127.0.0.1)"), logs());
        assertTrue(took >= 15, "declared lost after only " + took + " s: the 20 s deadline was not respected");
        assertFalse(running(pids[0]), "node 0's worker outlived its launcher");
    }

    @Test
    void killingTheMasterLauncherStopsNodeOneAndNodeZerosWorker() throws Exception {
        Process node0 = start(0, "train", 600);
        Process node1 = start(1, "train", 600);
        long[] pids = LauncherJobs.awaitPids(dir, 2, launchers, this::logs);
        long t0 = System.nanoTime();
        node0.destroyForcibly(); // kill -9 of the launcher that serves the store
        assertGoneWithin(pids[0], 5, "node 0's worker, whose launcher was killed,");
        awaitExit(node1, STOP_BOUND_S, t0, "node 1's launcher");
        assertNotEquals(0, node1.exitValue(), logs());
        String expected = "lost node 0 (127.0.0.1): the store at 127.0.0.1:" + port + " did not answer for 20 s";
        assertTrue(logText(1).lines().anyMatch(l -> l.startsWith("ddp4j-run: node 1: ") && l.contains(expected)), logs());
        assertTrue(logText(1).contains("root cause: " + expected), logs());
        assertFalse(running(pids[1]), "node 1's worker outlived its launcher");
    }

    @Test
    void nodeZeroWaitingAtTheExitBarrierNoticesALostNode() throws Exception {
        // Node 0's worker is done at once; node 1's sleeps. Killing node 1's launcher must not leave
        // node 0 waiting the whole rendezvous timeout at the exit barrier and exiting 0.
        Process node0 = start(0, 2, WORKER, "env", dir.toString());
        Process node1 = start(1, 2, WORKER, "sleep", dir.toString());
        long sleeper = awaitPidFile("pid-1");
        awaitFile("rank-0"); // node 0's worker wrote its report: it is done
        Thread.sleep(1000);
        assertTrue(node0.isAlive(), "node 0 must wait for node 1 at the exit barrier:" + logs());
        long t0 = System.nanoTime();
        node1.destroyForcibly();
        assertGoneWithin(sleeper, 5, "node 1's worker, whose launcher was killed,");
        awaitExit(node0, STOP_BOUND_S, t0, "node 0's launcher");
        assertNotEquals(0, node0.exitValue(), logs());
        assertTrue(logText(0).contains("ddp4j-run: node 0: the workers of this node finished, but lost node 1"
                + " (127.0.0.1): no keep-alive for 20 s"), logs());
    }

    @Test
    void aCommandWorkerAndItsChildrenDieWithTheirLauncher() throws Exception {
        Process node0 = start(0, 1, "sh", "-c", "sleep 60 & echo $! > \"$0/child.tmp\"; mv \"$0/child.tmp\" \"$0/child\";"
                + " echo $$ > \"$0/shell.tmp\"; mv \"$0/shell.tmp\" \"$0/shell\"; wait", dir.toString());
        long shell = awaitPidFile("shell");
        long child = awaitPidFile("child");
        assertTrue(running(shell) && running(child), logs());
        node0.destroyForcibly(); // kill -9 of the launcher
        assertGoneWithin(shell, 5, "the command worker");
        assertGoneWithin(child, 5, "the command worker's child");
    }

    @Test
    void aWorkerKilledOnNodeOneIsTheRootCauseOnBothNodes() throws Exception {
        Process node0 = start(0, "train", 600);
        Process node1 = start(1, "train", 600);
        long[] pids = LauncherJobs.awaitPids(dir, 2, launchers, this::logs);
        Thread.sleep(1000); // a few steps in
        long t0 = System.nanoTime();
        ProcessHandle.of(pids[1]).orElseThrow().destroyForcibly(); // kill -9 of rank 1
        awaitExit(node1, STOP_BOUND_S, t0, "node 1's launcher");
        awaitExit(node0, STOP_BOUND_S, t0, "node 0's launcher");
        assertNotEquals(0, node0.exitValue(), logs());
        assertNotEquals(0, node1.exitValue(), logs());
        String cause = "root cause: rank 1 (node 1, local rank 0) was killed by signal 9";
        assertTrue(logText(0).contains(cause), logs());
        assertTrue(logText(1).contains(cause), logs());
        assertFalse(logs().contains("root cause: rank 0"), logs());
        assertFalse(running(pids[0]), "rank 0 still runs");
    }

    @Test
    void aWorkerExitingWithCodeThreeIsNamedWithItsCodeOnBothNodes() throws Exception {
        Process node0 = start(0, "train-fail", 600);
        Process node1 = start(1, "train-fail", 600);
        long[] pids = LauncherJobs.awaitPids(dir, 2, launchers, this::logs);
        long t0 = System.nanoTime();
        awaitExit(node1, 60, t0, "node 1's launcher");
        awaitExit(node0, 60, t0, "node 0's launcher");
        assertNotEquals(0, node0.exitValue(), logs());
        assertNotEquals(0, node1.exitValue(), logs());
        String cause = "root cause: rank 1 (node 1, local rank 0) exited with code 3";
        assertTrue(logText(0).contains(cause), logs());
        assertTrue(logText(1).contains(cause), logs());
        assertFalse(logs().contains("root cause: rank 0"), logs());
        assertFalse(running(pids[0]), "rank 0 still runs");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"launcher of node 0", "launcher of node 1", "worker of node 1"})
    void aProcessStoppedForTenSecondsIsRiddenOut(String which) throws Exception {
        Process node0 = start(0, "train", 200); // about 20 s of training
        Process node1 = start(1, "train", 200);
        long[] pids = LauncherJobs.awaitPids(dir, 2, launchers, this::logs);
        Thread.sleep(1000);
        long target = switch (which) {
            case "launcher of node 0" -> node0.pid();
            case "launcher of node 1" -> node1.pid();
            default -> pids[1];
        };
        LauncherJobs.signal("STOP", target);
        try {
            Thread.sleep(10_000);
        } finally {
            LauncherJobs.signal("CONT", target);
        }
        long t0 = System.nanoTime();
        awaitExit(node0, 90, t0, "node 0's launcher");
        awaitExit(node1, 90, t0, "node 1's launcher");
        assertEquals(0, node0.exitValue(), logs());
        assertEquals(0, node1.exitValue(), logs());
        assertTrue(logText(0).contains("[rank0]: trained"), logs());
        assertTrue(logText(1).contains("[rank1]: trained"), logs());
        assertFalse(logs().contains("lost node"), logs());
    }

    /** Kills everything the test started, even after a failure, and checks that nothing survived. */
    @AfterEach
    void killEverything() throws Exception {
        System.out.println(logs());
        LauncherJobs.killEverything(launchers, dir, 2);
    }

    private Path log(int node) {
        return LauncherJobs.log(dir, node);
    }

    private String logText(int node) throws IOException {
        return LauncherJobs.logText(dir, node);
    }

    private String logs() throws IOException {
        return LauncherJobs.logs(dir, 2);
    }
}
