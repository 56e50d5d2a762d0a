package org.ddp4j.multiprocessing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** Whether worker processes still run, for the launcher and for spawn, which stop them alike. */
public final class Processes {

    /**
     * Whether {@code h} still runs. A killed grandchild stays a zombie, which
     * {@link ProcessHandle#isAlive()} counts as alive, until init reaps it; on Linux a zombie
     * counts as gone here.
     */
    public static boolean isRunning(ProcessHandle h) {
        if (!h.isAlive()) {
            return false;
        }
        char state = state(h.pid());
        return state == 0 ? h.isAlive() : state != 'Z' && state != 'X';
    }

    /**
     * The kernel's state letter of process {@code pid} ({@code /proc/PID/stat}): R running, S
     * sleeping, T stopped (SIGSTOP, Ctrl-Z), t stopped by a debugger, Z zombie, ...; 0 when unknown
     * (no procfs, or the process is gone).
     */
    public static char state(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            int close = stat.lastIndexOf(')'); // the command name may contain blanks and parentheses
            return close > 0 && close + 2 < stat.length() ? stat.charAt(close + 2) : 0;
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /** Whether {@code state} ({@link #state}) is a stopped process's: SIGSTOP, Ctrl-Z, or a debugger. */
    public static boolean isStopped(char state) {
        return state == 'T' || state == 't';
    }

    /**
     * Waits until none of {@code handles} runs or {@code limit} passed, polling every 10 ms.
     *
     * @return whether none runs (false also when interrupted, with the interrupt flag set again)
     */
    public static boolean awaitExit(List<ProcessHandle> handles, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (handles.stream().anyMatch(Processes::isRunning)) {
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    private Processes() {}
}
