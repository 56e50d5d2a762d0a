package org.ddp4j.distributed;

import java.nio.file.Path;
import java.util.Map;

/**
 * SIGUSR2 asks a worker for its flight-recorder dump, as PyTorch users send signals for dumps.
 * HotSpot suspends and resumes threads with SIGUSR2 unless {@code _JAVA_SR_SIGNUM} moves that to
 * another signal, and a SIGUSR2 it did not expect crashes the JVM (SIGSEGV in its handler, an
 * hs_err file). ddp4j's workers (the launcher's and spawn's) start with {@link #SR_SIGNUM_ENV} set
 * to {@link #SR_SIGNUM}, and install the dump handler; a JVM started otherwise keeps HotSpot's
 * handler, untouched.
 */
public final class DumpSignal {
    /** HotSpot's environment variable that moves its suspend/resume signal. */
    public static final String SR_SIGNUM_ENV = "_JAVA_SR_SIGNUM";
    /** Where ddp4j's workers move it: a real-time signal (SIGRTMIN + 5) nothing else sends. */
    public static final String SR_SIGNUM = "39";

    private DumpSignal() {}

    /** Sets {@link #SR_SIGNUM_ENV} in a worker's environment unless the user set it. */
    public static void moveSuspendSignal(Map<String, String> workerEnv) {
        workerEnv.putIfAbsent(SR_SIGNUM_ENV, SR_SIGNUM);
    }

    /**
     * Makes SIGUSR2 write this process's flight-recorder dump, when HotSpot's suspend/resume signal
     * is elsewhere ({@link #SR_SIGNUM_ENV} set to another signal); else leaves SIGUSR2 to HotSpot.
     *
     * @return whether the handler was installed
     */
    public static boolean installIfSafe() {
        String moved = System.getenv(SR_SIGNUM_ENV);
        if (moved == null || moved.isBlank() || moved.strip().equals("12")) {
            return false;
        }
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("USR2"), signal -> {
                Thread t = new Thread(DumpSignal::dump, "ddp4j-sigusr2-dump");
                t.setDaemon(true);
                t.start();
            });
            return true;
        } catch (IllegalArgumentException | UnsupportedOperationException e) {
            System.err.println("ddp4j: SIGUSR2 will not write a flight-recorder dump here: " + e.getMessage());
            return false;
        }
    }

    private static void dump() {
        Path file = FlightRecorderMonitor.dump("on SIGUSR2");
        if (file == null) {
            System.err.println("ddp4j: SIGUSR2: this process has no process group yet, so no flight-recorder dump to write");
            System.err.flush();
        }
    }
}
