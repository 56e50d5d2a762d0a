package org.ddp4j.debug;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ddp4j.launch.Launcher;
import org.ddp4j.multiprocessing.Processes;
import org.ddp4j.multiprocessing.WorkerJvm;
import org.ddp4j.testing.LauncherJobs;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The flight recorder and the stall inspector in real jobs: 3 ranks through the launcher
 * ({@link FlightRecorderTestWorker}), with a 2 s stall warning and a 10 s collective timeout.
 * A rank hung with SIGSTOP is named by the stall lines on both launchers (each its own node's and,
 * relayed through the store, the other's), by the root cause and, after the timeout,
 * by the dumps' summary; a rank that skips a collective is named with both calls.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class FlightRecorderJobTest {
    private static final String WORKER = FlightRecorderTestWorker.class.getName();
    /** A launcher's line of its own worker's stall warning (not one relayed from another node). */
    private static final Pattern STALL = Pattern.compile(
            "(?m)^\\[rank\\d\\]: ddp4j: stall: rank (\\d) has waited [0-9.]+ s in (allReduce\\(SUM\\) of 1 float32 element|broadcast from rank 0 of"
                    + " 2 float32 elements) \\(#(\\d+)\\).*not yet started by rank 1 \\(");

    @TempDir
    Path dir;

    private final List<Process> launchers = new ArrayList<>();

    /** Starts node {@code node} of {@code nnodes} with {@code nproc} workers in {@code mode}; output in launcher-N.log. */
    private Process start(int node, int nnodes, int nproc, int port, String mode, int steps) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(WorkerJvm.javaExecutable(), "-cp", System.getProperty("java.class.path"),
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx96m", Launcher.class.getName(), "--nnodes",
                Integer.toString(nnodes), "--node-rank", Integer.toString(node), "--nproc-per-node",
                Integer.toString(nproc), "--master-port", Integer.toString(port), "--rdzv-timeout", "60", WORKER, mode,
                dir.toString(), Integer.toString(steps)));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log(node).toFile());
        Map<String, String> env = pb.environment();
        env.remove("OMP_NUM_THREADS");
        env.remove("CUDA_VISIBLE_DEVICES");
        env.put(WorkerJvm.JAVA_OPTS_ENV, "-Xshare:auto -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx64m");
        env.put("DDP4J_STALL_WARNING_SECONDS", "2");
        env.put("DDP4J_TIMEOUT_SECONDS", "10");
        env.put("DDP4J_DEBUG_DIR", dir.toString());
        Process p = pb.start();
        launchers.add(p);
        return p;
    }

    @Test
    void aStoppedRankIsNamedByTheStallLinesOnEveryLauncherAndByTheDumps() throws Exception {
        int port = freePort();
        // Node 0 runs ranks 0 and 1, node 1 runs rank 2: both nodes have a rank that waits for rank 1.
        Process node0 = start(0, 2, 2, port, "steps", 1200);
        Process node1 = start(1, 2, 1, port, "steps", 1200);
        long[] pids = LauncherJobs.awaitPids(dir, 3, launchers, this::logs);
        Thread.sleep(1500); // some collectives in
        LauncherJobs.signal("STOP", pids[1]);
        assertTrue(node0.waitFor(90, TimeUnit.SECONDS), "node 0's launcher did not exit:" + logs());
        assertTrue(node1.waitFor(90, TimeUnit.SECONDS), "node 1's launcher did not exit:" + logs());
        assertNotEquals(0, node0.exitValue(), logs());
        assertNotEquals(0, node1.exitValue(), logs());

        // Every launcher showed a stall line of its waiting rank, naming rank 1 and the collective.
        long seq = -1;
        for (int node = 0; node < 2; node++) {
            Matcher m = STALL.matcher(logText(node));
            assertTrue(m.find(), "no stall line naming rank 1 on node " + node + ":" + logs());
            assertEquals(node == 0 ? "0" : "2", m.group(1), logs());
            long s = Long.parseLong(m.group(3));
            assertTrue(seq < 0 || seq == s, "the two waiting ranks name different collectives:" + logs());
            seq = s;
        }
        // Each launcher also relayed the other node's stall line (a node whose only rank were the stopped
        // one would show the stall through these alone).
        assertTrue(logText(0).lines().anyMatch(l -> l.startsWith("ddp4j-run: warning: node 1: [rank2]: ddp4j: stall: rank 2 ")),
                "node 0 did not show node 1's stall line:" + logs());
        assertTrue(logText(1).lines().anyMatch(l -> l.startsWith("ddp4j-run: warning: node 0: [rank0]: ddp4j: stall: rank 0 ")),
                "node 1 did not show node 0's stall line:" + logs());
        // The root cause is the stopped rank, on both launchers, not a rank that waited for it.
        for (int node = 0; node < 2; node++) {
            assertTrue(logText(node).lines().anyMatch(l -> l.contains("the job failed; root cause: rank 1 ")),
                    "launcher " + node + " did not name rank 1 as the root cause:" + logs());
        }
                // Both waiting ranks dumped at the timeout; the stopped one could not.
        assertTrue(Files.exists(FlightRecorderDump.file(dir, 0)), logs());
        assertTrue(Files.exists(FlightRecorderDump.file(dir, 2)), logs());
        assertFalse(Files.exists(FlightRecorderDump.file(dir, 1)), logs());
        JsonNode dump0 = FlightRecorderDump.read(FlightRecorderDump.file(dir, 0));
        assertEquals(3, dump0.get("world_size").asInt());
        // Rank 0 timed out, or rank 2 did a moment earlier and aborted the shared segment under rank 0.
        String trigger = dump0.get("trigger").asText();
        assertTrue(trigger.startsWith("a collective timed out") || trigger.startsWith("a collective failed"), trigger);
        assertTrue(trigger.matches(".* timed out after 10 s on rank [02] waiting for rank 1 .*"), trigger);
        // Shared memory's timeout names the call as Gloo's does, with its collective number.
        assertTrue(trigger.contains("allReduce(SUM) of 1 float32 element (#" + seq + ") timed out"), trigger);
        JsonNode last = dump0.get("entries").get(dump0.get("entries").size() - 1);
        assertEquals(seq, last.get("collective_seq_id").asLong());
        assertEquals("failed", last.get("state").asText());
        assertEquals("FlightRecorderTestWorker.java:" + lineOf(last.get("op").asText()),
                dump0.get("main_thread_location").asText());

        String summary = FlightRecorderReport.summarize(FlightRecorderDump.find(dir, 0));
        String expected = "collective #" + seq + " ";
        assertTrue(summary.contains(expected) && summary.contains("rank 1 is not known to have started it — it wrote no dump"), summary);
        for (int node = 0; node < 2; node++) {
            String launcherLog = logText(node);
            assertTrue(launcherLog.lines().anyMatch(l -> l.startsWith("ddp4j-run: collective #") && l.contains(expected)
                    && l.contains("rank 1 is not known to have started it")), "launcher " + node + " printed no summary:" + logs());
        }
        for (long pid : pids) {
            assertFalse(ProcessHandle.of(pid).map(Processes::isRunning).orElse(false), "pid " + pid + " still runs");
        }
    }

    @Test
    void aRankThatSkipsACollectiveIsNamedWithBothCalls() throws Exception {
        Process node0 = start(0, 1, 3, freePort(), "skip", 6);
        assertTrue(node0.waitFor(90, TimeUnit.SECONDS), "the launcher did not exit:" + logs());
        assertNotEquals(0, node0.exitValue(), logs());
        // Steps 1 and 2 are #1-#4; step 3's all-reduce is #5; its broadcast (#6) is where rank 1 calls step 4's all-reduce.
        String both = "collective #6: the ranks disagree: ranks 0, 2 called broadcast from rank 0 of 2 float32 elements;"
                + " rank 1 called allReduce(SUM) of 1 float32 element";
        StringWriter out = new StringWriter();
        CommandLine cl = new CommandLine(new FlightRecorderReport()).setOut(new PrintWriter(out));
        assertEquals(0, cl.execute(dir.toString()), out.toString());
        assertTrue(out.toString().contains(both), out.toString());
        assertTrue(out.toString().contains("rank 1 in FlightRecorderTestWorker.java:" + lineOf("allReduce")), out.toString());
        assertTrue(logText(0).contains("ddp4j-run: " + both), logs());
    }

    /** The line of FlightRecorderTestWorker that calls Distributed.{op}. */
    private static int lineOf(String op) throws IOException {
        List<String> lines = Files.readAllLines(Path.of("src/test/java/org/ddp4j/debug/FlightRecorderTestWorker.java"));
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("Distributed." + op + "(")) {
                return i + 1;
            }
        }
        throw new AssertionError("no call of " + op);
    }

    private static int freePort() throws IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Kills everything the test started, even after a failure, and checks that nothing survived. */
    @AfterEach
    void killEverything() throws Exception {
        System.out.println(logs());
        LauncherJobs.killEverything(launchers, dir, 3);
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
