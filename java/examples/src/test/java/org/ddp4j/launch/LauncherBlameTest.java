package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.internal.Setting;
import org.ddp4j.multiprocessing.WorkerJvm;
import org.ddp4j.testing.LauncherJobs;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The process that stood still is the root cause, not the ones that waited for it: a worker stopped
 * with SIGSTOP (its launcher's keep-alive goes on, its peers' collectives time out) and the store
 * host's launcher stopped longer than the keep-alive timeout (the other node gives it up, and its
 * workers then fail). Launchers on loopback as separate JVMs, workers all-reducing through
 * {@link LaunchTestWorker} {@code train}; the collective timeout is cut to a few seconds.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class LauncherBlameTest {

    private static final String WORKER = LaunchTestWorker.class.getName();

    /** The workers' collective timeout: long enough for a loaded machine's steps, short for the test. */
    private static final String COLLECTIVE_TIMEOUT_S = "8";

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

    @Test
    void aStoppedWorkerIsTheRootCauseOnItsOwnNode() throws Exception {
        Process node0 = start(0, 1, 2, Map.of());
        long[] pids = LauncherJobs.awaitPids(dir, 2, launchers, this::logs);
        LauncherJobs.signal("STOP", pids[1]);
        awaitExit(node0, 90, "the launcher");
        assertNotEquals(0, node0.exitValue(), logs());
        String log = logText(0);
        assertTrue(log.contains("root cause: rank 1 (node 0, local rank 1) was stopped (pid " + pids[1] + " in state T"), logs());
        assertFalse(log.contains("root cause: rank 0"), logs());
    }

    @Test
    void aStoppedWorkerOnNodeOneIsTheRootCauseOnBothNodes() throws Exception {
        Process node0 = start(0, 2, 1, Map.of());
        Process node1 = start(1, 2, 1, Map.of());
        long[] pids = LauncherJobs.awaitPids(dir, 2, launchers, this::logs);
        LauncherJobs.signal("STOP", pids[1]);
        awaitExit(node0, 90, "node 0's launcher");
        awaitExit(node1, 30, "node 1's launcher");
        assertNotEquals(0, node0.exitValue(), logs());
        assertNotEquals(0, node1.exitValue(), logs());
        String cause = "root cause: rank 1 (node 1, local rank 0) was stopped (pid " + pids[1] + " in state T";
        assertTrue(logText(0).contains(cause), logs());
        assertTrue(logText(1).contains(cause), logs());
        assertFalse(logs().contains("root cause: rank 0"), logs());
    }

    @Test
    void theStoreHostsOwnPauseIsItsRootCauseNotTheNodeThatGaveItUp() throws Exception {
        // A 4 s keep-alive timeout and a 9 s stop: node 1 must give node 0 up; node 0 then finds node 1 gone.
        Map<String, String> keepAlive = Map.of(KeepAlive.INTERVAL_ENV, "0.5", KeepAlive.TIMEOUT_ENV, "4");
        Process node0 = start(0, 2, 1, keepAlive);
        Process node1 = start(1, 2, 1, keepAlive);
        LauncherJobs.awaitPids(dir, 2, launchers, this::logs);
        LauncherJobs.signal("STOP", node0.pid());
        try {
            awaitExit(node1, 60, "node 1's launcher, whose store host stood still,");
            Thread.sleep(2000); // a pause clearly longer than the keep-alive timeout
        } finally {
            LauncherJobs.signal("CONT", node0.pid());
        }
        awaitExit(node0, 60, "node 0's launcher");
        assertNotEquals(0, node0.exitValue(), logs());
        assertNotEquals(0, node1.exitValue(), logs());
        assertTrue(logText(1).contains("root cause: lost node 0 (127.0.0.1)"), logs());
        assertTrue(logText(0).contains("root cause: the launcher of node 0 (127.0.0.1) was not running for"), logs());
        assertFalse(logText(0).contains("root cause: lost node 1"), logs());
        assertFalse(logText(0).contains("root cause: rank"), logs());
    }

    /** Starts node {@code node}'s launcher as its own JVM, output (both streams) in {@code launcher-N.log}. */
    private Process start(int node, int nnodes, int nproc, Map<String, String> extraEnv) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(WorkerJvm.javaExecutable(), "-cp",
                System.getProperty("java.class.path"), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx96m",
                Launcher.class.getName(), "--nnodes", Integer.toString(nnodes), "--node-rank", Integer.toString(node),
                "--nproc-per-node", Integer.toString(nproc), "--master-port", Integer.toString(port),
                "--rdzv-timeout", "60", WORKER, "train", dir.toString(), "600"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log(node).toFile());
        Map<String, String> env = pb.environment();
        env.clear();
        env.putAll(LauncherTest.baseEnv());
        env.remove(KeepAlive.INTERVAL_ENV);
        env.remove(KeepAlive.TIMEOUT_ENV);
        env.put(Setting.TIMEOUT_SECONDS.variable(), COLLECTIVE_TIMEOUT_S);
        env.putAll(extraEnv);
        Process p = pb.start();
        launchers.add(p);
        return p;
    }

    private void awaitExit(Process p, long seconds, String what) throws Exception {
        assertTrue(p.waitFor(seconds, TimeUnit.SECONDS), what + " did not exit within " + seconds + " s:" + logs());
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
