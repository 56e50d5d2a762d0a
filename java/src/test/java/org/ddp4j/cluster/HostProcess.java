package org.ddp4j.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A process that {@link NetnsCluster} started in one of its hosts, with its output in a log file.
 * The process is the program itself ({@code ip netns exec} replaces itself with it), so its pid
 * is the launcher's or the worker's, and its children are what it started.
 */
public final class HostProcess {
    private final String name;
    private final int host;
    private final Process process;
    private final Path log;

    HostProcess(String name, int host, Process process, Path log) {
        this.name = name;
        this.host = host;
        this.process = process;
        this.log = log;
    }

    /** The name given at start, e.g. "node0". */
    public String name() {
        return name;
    }

    /** The host it runs in, 1..N. */
    public int host() {
        return host;
    }

    /** Its pid. */
    public long pid() {
        return process.pid();
    }

    /** Whether it is still running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** Its file of output (stdout and stderr merged). */
    public Path log() {
        return log;
    }

    /** Everything it printed so far. */
    public String output() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "<cannot read " + log + ": " + e + ">";
        }
    }

    /** What it printed, with a header naming it, for assertion messages. */
    public String describe() {
        return "---- " + name + " (host " + host + ", pid " + pid() + ", " + (isAlive() ? "running" : "exit code "
                + process.exitValue()) + ", log " + log + ") ----\n" + output();
    }

    /** The pids of the processes it started (a launcher's workers). */
    public List<Long> childPids() {
        return process.toHandle().children().map(ProcessHandle::pid).toList();
    }

    /**
     * Waits until its output contains {@code text}.
     *
     * @throws AssertionError with its output when it exits first or {@code limit} passes
     */
    public void awaitOutput(String text, Duration limit) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!output().contains(text)) {
            if (!isAlive() && !output().contains(text)) {
                throw new AssertionError(name + " exited before printing \"" + text + "\"\n" + describe());
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(name + " did not print \"" + text + "\" within " + limit.toSeconds() + " s\n"
                        + describe());
            }
            Thread.sleep(100);
        }
    }

    /**
     * Waits for it to exit and returns its exit code.
     *
     * @throws AssertionError with its output when it is still running after {@code limit}
     */
    public int awaitExit(Duration limit) throws InterruptedException {
        if (!process.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError(name + " did not exit within " + limit.toSeconds() + " s\n" + describe());
        }
        return process.exitValue();
    }

    /** Sends {@code signal} (STOP, CONT, KILL, TERM ...) to the process with pid {@code pid}, through kill(1). */
    public static void signal(long pid, String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true).start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill -" + signal + " " + pid + " failed: "
                    + new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    /** Sends {@code signal} to this process. */
    public void signal(String signal) throws IOException, InterruptedException {
        signal(pid(), signal);
    }

    /** Kills it and everything it started (SIGKILL, which also ends a stopped process). */
    public void kill() {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
    }
}
