package org.ddp4j.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.ddp4j.multiprocessing.Processes;

/**
 * What the tests that run launchers as separate JVMs share: their logs ({@code dir/launcher-<node>.log}),
 * waiting for the workers' pid files
 * ({@code DIR/pid-<RANK>}, written by the test workers once they joined their group), signalling
 * them, and killing everything afterwards while checking that nothing the test started survived.
 */
public final class LauncherJobs {
    private LauncherJobs() {}

    /**
     * Waits up to 60 s until ranks 0..n-1 wrote {@code dir/pid-<rank>}; returns the pids by rank.
     * Fails at once when a launcher exits first; {@code logs} describes the launchers' output.
     */
    public static long[] awaitPids(Path dir, int n, List<Process> launchers, Callable<String> logs) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        long[] pids = new long[n];
        for (int rank = 0; rank < n; rank++) {
            Path f = dir.resolve("pid-" + rank);
            while (!Files.exists(f)) {
                for (Process p : launchers) {
                    assertTrue(p.isAlive(), "a launcher exited before the workers started:" + logs.call());
                }
                assertTrue(System.nanoTime() < deadline, "the workers did not start within 60 s:" + logs.call());
                Thread.sleep(50);
            }
            pids[rank] = Long.parseLong(Files.readString(f).trim());
        }
        return pids;
    }

    /** Where the test writes launcher {@code node}'s output: {@code dir/launcher-<node>.log}. */
    public static Path log(Path dir, int node) {
        return dir.resolve("launcher-" + node + ".log");
    }

    /** Launcher {@code node}'s output so far ("" before it wrote any). */
    public static String logText(Path dir, int node) throws IOException {
        Path log = log(dir, node);
        return Files.exists(log) ? Files.readString(log) : "";
    }

    /** Every launcher's output, each under a "--- node N:" line, for assertion messages. */
    public static String logs(Path dir, int nodes) throws IOException {
        StringBuilder out = new StringBuilder();
        for (int node = 0; node < nodes; node++) {
            out.append("\n--- node ").append(node).append(":\n").append(logText(dir, node));
        }
        return out.toString();
    }

    /** {@code kill -SIG pid}, e.g. signal("STOP", pid). */
    public static void signal(String sig, long pid) throws Exception {
        Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
        assertEquals(0, k.waitFor(), "kill -" + sig + " " + pid);
    }

    /**
     * Kills the launchers, their descendants and the workers whose pid files are in {@code dir}
     * (ranks 0..ranks-1; SIGKILL also ends a stopped process), then checks for 10 s that no
     * descendant of this JVM still runs.
     */
    public static void killEverything(List<Process> launchers, Path dir, int ranks) throws Exception {
        for (Process p : launchers) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        for (int rank = 0; rank < ranks; rank++) {
            Path f = dir.resolve("pid-" + rank);
            if (Files.exists(f)) {
                ProcessHandle.of(Long.parseLong(Files.readString(f).trim())).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<ProcessHandle> left;
        do {
            Thread.sleep(50);
            left = ProcessHandle.current().descendants().filter(Processes::isRunning).collect(Collectors.toList());
        } while (!left.isEmpty() && System.nanoTime() < deadline);
        assertEquals(List.of(), left.stream().map(h -> h.pid() + " " + h.info().commandLine().orElse("?"))
                .collect(Collectors.toList()), "processes this test started are still running");
    }
}
