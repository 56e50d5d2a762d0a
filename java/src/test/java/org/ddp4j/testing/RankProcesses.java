package org.ddp4j.testing;

import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.function.IntUnaryOperator;

/**
 * Runs a main class as the ranks of one job, one JVM each, through env:// (MASTER_ADDR 127.0.0.1,
 * a free MASTER_PORT, WORLD_SIZE, RANK), as the launcher would, and collects their outputs.
 */
public final class RankProcesses {
    private RankProcesses() {}

    /**
     * Starts {@code world} JVMs running {@code main} with {@code args} and the extra environment
     * {@code env}; fails the test if a rank runs past {@code limit} or exits with another status
     * than {@code expectedExit} of its rank, showing every rank's output. Returns the outputs (stdout and
     * stderr) by rank.
     */
    public static List<String> run(Class<?> main, int world, Map<String, String> env, Duration limit,
            IntUnaryOperator expectedExit, String... args) throws Exception {
        return run(main, world, rank -> env, limit, expectedExit, args);
    }

    /**
     * As {@link #run(Class, int, Map, Duration, IntUnaryOperator, String...)}, with each rank's extra
     * environment from {@code envOf} (e.g. a per-rank DDP4J_SHM_HOST_ID, to pretend hosts).
     */
    public static List<String> run(Class<?> main, int world, IntFunction<Map<String, String>> envOf, Duration limit,
            IntUnaryOperator expectedExit, String... args) throws Exception {
        int port = LauncherProcess.freePort();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> processes = new ArrayList<>();
        List<CompletableFuture<String>> outputs = new ArrayList<>();
        try {
            for (int rank = 0; rank < world; rank++) {
                List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp",
                        System.getProperty("java.class.path"), main.getName()));
                command.addAll(List.of(args));
                ProcessBuilder pb = new ProcessBuilder(command);
                Map<String, String> e = pb.environment();
                e.remove("DDP4J_AGENT_STORE");
                e.put("MASTER_ADDR", "127.0.0.1");
                e.put("MASTER_PORT", Integer.toString(port));
                e.put("WORLD_SIZE", Integer.toString(world));
                e.put("RANK", Integer.toString(rank));
                e.putAll(envOf.apply(rank));
                pb.redirectErrorStream(true);
                Process p = pb.start();
                processes.add(p);
                // Read while it runs: a rank that prints more than a pipe holds must not block.
                CompletableFuture<String> out = new CompletableFuture<>();
                Thread reader = new Thread(() -> out.complete(readAll(p)), "rank-" + rank + "-output");
                reader.setDaemon(true);
                reader.start();
                outputs.add(out);
            }
            long deadline = System.nanoTime() + limit.toNanos();
            for (int rank = 0; rank < world; rank++) {
                Process p = processes.get(rank);
                if (!p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    fail("rank " + rank + " did not finish within " + limit.toSeconds() + " s" + allOutputs(processes, outputs));
                }
                if (p.exitValue() != expectedExit.applyAsInt(rank)) {
                    fail("rank " + rank + " exited with " + p.exitValue() + ", expected " + expectedExit.applyAsInt(rank)
                            + allOutputs(processes, outputs));
                }
            }
            List<String> texts = new ArrayList<>();
            for (CompletableFuture<String> out : outputs) {
                texts.add(out.get(10, TimeUnit.SECONDS));
            }
            return texts;
        } finally {
            for (Process p : processes) {
                p.destroyForcibly();
            }
        }
    }

    /** Every rank's output, each under its own heading (ranks still running are stopped first). */
    private static String allOutputs(List<Process> processes, List<CompletableFuture<String>> outputs) {
        StringBuilder text = new StringBuilder();
        for (int rank = 0; rank < processes.size(); rank++) {
            Process p = processes.get(rank);
            boolean running = p.isAlive();
            if (running) {
                p.destroyForcibly();
            }
            String out;
            try {
                p.waitFor(10, TimeUnit.SECONDS);
                out = outputs.get(rank).get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                out = "(its output could not be read: " + e + ")";
            }
            text.append("\n--- rank ").append(rank).append(running ? " (was still running, stopped)" : "")
                    .append(" output:\n").append(out);
        }
        return text.toString();
    }

    private static String readAll(Process p) {
        try {
            return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
            return "(reading its output failed: " + e + ")";
        }
    }
}
