package org.ddp4j.multiprocessing;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.ErrorFile;
import org.ddp4j.distributed.WorkerError;

/**
 * The running workers of one {@link Spawn}: mirrors {@code torch.multiprocessing}'s
 * {@code ProcessContext}. {@link #join()} waits for all of them; when one fails, the others are
 * stopped (SIGTERM, then SIGKILL after the grace period) and a {@link SpawnException} names it.
 * {@link #close()} stops whatever still runs. Workers also stop when this JVM exits or dies.
 */
@SuppressWarnings("deprecation") // extends its old home, so that code typed with the old import still compiles
public final class SpawnContext extends org.ddp4j.distributed.SpawnContext {
    /** Lines of a failed worker's stderr quoted in the {@link SpawnException}. */
    public static final int STDERR_TAIL_LINES = 12;

    /** How often join looks at the workers. */
    private static final long POLL_MILLIS = 50;

    /** How long join waits for the output threads once the workers are gone. */
    private static final Duration DRAIN = Duration.ofSeconds(2);

    /** One started worker and the pumps copying its output. */
    /** A started worker; {@code errorFile} is where it records its failure ({@link ErrorFile}), or null. */
    record Worker(int index, int rank, Process process, Thread out, Thread err, OutputPump errPump, Path errorFile) {}

    private final List<Worker> workers;
    private final Duration stopGrace;
    private final Thread shutdownHook;
    private boolean joined;

    SpawnContext(List<Worker> workers, Duration stopGrace) {
        this.workers = List.copyOf(workers);
        this.stopGrace = stopGrace;
        // A normal exit or SIGTERM of this JVM stops the workers at once; stdin EOF covers kill -9.
        this.shutdownHook = new Thread(this::stopQuietly, "ddp4j-spawn-stop");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /** The workers' process ids, by index. */
    public List<Long> pids() {
        return workers.stream().map(w -> w.process().pid()).toList();
    }

    /** How many workers were started. */
    public int nprocs() {
        return workers.size();
    }

    /**
     * Waits until every worker has exited with code 0. Mirrors {@code ProcessContext.join()} in a
     * loop, as {@code mp.spawn(join=True)} does; no bound, since training may take days.
     *
     * @throws SpawnException naming the first worker that failed (the others are stopped first)
     * @throws DistributedException if this thread is interrupted (the workers are stopped first)
     */
    public void join() {
        while (!join(Duration.ofDays(1))) {
            // keep waiting
        }
    }

    /**
     * Waits at most {@code timeout} for the workers. Mirrors {@code ProcessContext.join(timeout)}.
     *
     * @return true when every worker has exited with code 0, false when some still run after the timeout
     * @throws SpawnException naming the first worker that failed (the others are stopped first)
     * @throws DistributedException if this thread is interrupted (the workers are stopped first)
     */
    public boolean join(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            boolean allDone = true;
            for (Worker w : workers) {
                if (w.process().isAlive()) {
                    allDone = false;
                } else if (w.process().exitValue() != 0) {
                    throw failure(w);
                }
            }
            if (allDone) {
                finish();
                return true;
            }
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            try {
                Thread.sleep(POLL_MILLIS);
            } catch (InterruptedException e) {
                stop();
                Thread.currentThread().interrupt();
                throw new DistributedException("interrupted while waiting for " + workers.size()
                        + " spawned workers; they were stopped");
            }
        }
    }

    /** Stops every worker still running: SIGTERM, then SIGKILL after the grace period; bounded. */
    @Override
    public void close() {
        stop();
        finish();
    }

    private SpawnException failure(Worker failed) {
        int stillRunning = stop();
        drain();
        finish();
        int code = failed.process().exitValue();
        String signal = signalName(code);
        List<String> tail = failed.errPump().tail();
        StringBuilder msg = new StringBuilder("spawned worker rank ").append(failed.rank()).append(" (index ")
                .append(failed.index()).append(" of ").append(workers.size()).append(')');
        if (signal != null) {
            msg.append(" was killed by ").append(signal).append(" (exit code ").append(code).append(')');
            if (code == 128 + 9) {
                msg.append(": kill -9, or the kernel's out-of-memory killer (see dmesg)");
            }
        } else {
            msg.append(" failed with exit code ").append(code);
            WorkerError recorded = failed.errorFile() == null ? null : ErrorFile.read(failed.errorFile());
            String thrown = recorded != null ? recorded.type() + ": " + recorded.message() : thrownBy(tail);
            if (thrown != null) {
                msg.append(" (it threw ").append(thrown).append(')');
            }
        }
        msg.append("; ").append(stillRunning == 0 ? "no other worker was running"
                : "stopped the other " + stillRunning + " worker" + (stillRunning == 1 ? "" : "s"));
        if (tail.isEmpty()) {
            msg.append(". It wrote nothing to stderr.");
        } else {
            msg.append(". Last lines of its stderr:");
            for (String line : tail) {
                msg.append("\n  ").append(line);
            }
        }
        return new SpawnException(msg.toString(), failed.rank(), failed.index(), code, signal, tail);
    }

    /**
     * The exception named in SpawnWorker's last line ("... failed: java.lang.X: message"), or null:
     * for a worker that wrote no error file.
     */
    private static String thrownBy(List<String> tail) {
        for (int i = tail.size() - 1; i >= 0; i--) {
            String line = tail.get(i);
            int at = line.indexOf(SpawnWorker.FAILED_MARK);
            if (line.startsWith("spawned worker rank ") && at > 0) {
                return line.substring(at + SpawnWorker.FAILED_MARK.length());
            }
        }
        return null;
    }

    /** "SIGKILL" for exit code 137 and other 128 + N codes that a signal N gives; null otherwise. */
    static String signalName(int exitCode) {
        if (exitCode <= 128 || exitCode > 128 + 64) {
            return null;
        }
        int sig = exitCode - 128;
        return switch (sig) {
            case 1 -> "SIGHUP";
            case 2 -> "SIGINT";
            case 3 -> "SIGQUIT";
            case 6 -> "SIGABRT";
            case 7 -> "SIGBUS";
            case 8 -> "SIGFPE";
            case 9 -> "SIGKILL";
            case 11 -> "SIGSEGV";
            case 13 -> "SIGPIPE";
            case 15 -> "SIGTERM";
            default -> "signal " + sig;
        };
    }

    /**
     * Stops the workers still running and their child processes: SIGTERM, then SIGKILL for what
     * is left after the grace period. Returns how many workers were still running.
     */
    synchronized int stop() {
        List<ProcessHandle> targets = new ArrayList<>();
        int running = 0;
        for (Worker w : workers) {
            ProcessHandle h = w.process().toHandle();
            if (h.isAlive()) {
                running++;
                h.descendants().forEach(targets::add); // before the worker dies and they are re-parented
                targets.add(h);
            }
        }
        targets.forEach(ProcessHandle::destroy);
        if (!Processes.awaitExit(targets, stopGrace)) {
            targets.stream().filter(Processes::isRunning).forEach(ProcessHandle::destroyForcibly);
            Processes.awaitExit(targets, Duration.ofSeconds(2));
        }
        for (Worker w : workers) {
            try {
                w.process().waitFor(1, TimeUnit.SECONDS); // reaped: no zombie left
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return running;
    }

    private void stopQuietly() {
        try {
            stop();
        } catch (RuntimeException e) {
            // the JVM is exiting; the workers' parent watch stops them anyway
        }
    }

    /** Removes the shutdown hook once nothing is left to stop. */
    private synchronized void finish() {
        if (joined) {
            return;
        }
        joined = true;
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
            // the JVM is already shutting down
        }
        drain();
    }

    /** Waits a little for the output threads, so the workers' last lines come before the caller's. */
    private void drain() {
        long deadline = System.nanoTime() + DRAIN.toNanos();
        for (Worker w : workers) {
            for (Thread t : List.of(w.out(), w.err())) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) {
                    return;
                }
                try {
                    t.join(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }


}
