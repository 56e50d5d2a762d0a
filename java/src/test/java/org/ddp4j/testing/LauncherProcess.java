package org.ddp4j.testing;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Runs scripts/ddp4j-run's main class (org.ddp4j.launch.Launcher) in a child JVM with the test class path. */
public final class LauncherProcess {
    private LauncherProcess() {}

    /** What a launcher process printed (stdout and stderr merged) and how it exited. */
    public record Result(int exitCode, List<String> lines) {
        public String text() {
            return String.join("\n", lines);
        }
    }

    /** A port nobody listens on right now. */
    public static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Starts a launcher with {@code args}. */
    public static Process start(String... args) throws IOException {
        return start(Map.of(), args);
    }

    /** Starts a launcher with {@code args} and {@code env} added to this process's environment. */
    public static Process start(Map<String, String> env, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "org.ddp4j.launch.Launcher"));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(env);
        return builder.start();
    }

    /** Waits for a started launcher (at most 240 s, then kills it) and collects its output. */
    public static Result finish(Process p) throws Exception {
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "<output lost: " + e + ">";
            }
        });
        boolean finished;
        try {
            finished = p.waitFor(240, TimeUnit.SECONDS);
        } catch (InterruptedException e) { // e.g. a JUnit @Timeout: do not leave the workers running
            kill(p);
            throw e;
        }
        if (!finished) {
            kill(p);
            throw new AssertionError("launcher did not finish within 240 s (its [rankN] lines show which ranks got"
                    + " how far):\n" + out.get(5, TimeUnit.SECONDS));
        }
        return new Result(p.exitValue(), out.get(30, TimeUnit.SECONDS).lines().toList());
    }

    /** Kills a launcher and every worker it started. */
    public static void kill(Process p) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
    }

    /** Runs one launcher to the end. */
    public static Result run(String... args) throws Exception {
        return finish(start(args));
    }
}
