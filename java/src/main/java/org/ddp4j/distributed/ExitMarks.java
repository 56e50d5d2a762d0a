package org.ddp4j.distributed;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.store.Store;

/**
 * Tells a peer that exited (or closed its group) from one that was killed or crashed, where the
 * connection alone cannot: over TCP both just close it. A rank writes {@value #KEY}RANK into its
 * group's store when it closes the group and, from a shutdown hook, when its JVM exits (main
 * returning, {@code System.exit}, SIGTERM); kill -9, the out-of-memory killer and a crash run no
 * hook, so no mark appears. The DDP reducer asks here before it blames uneven inputs: a peer that
 * exited early is what {@code ddp.join()} is for, a killed one is not. (The shared-memory
 * transport tells the two apart by itself, see shm_transport.h's kPeerKilled.)
 */
public final class ExitMarks {
    /** The store key of a group rank's mark, e.g. "ddp4j/exited/1"; its value is the pid. */
    static final String KEY = "ddp4j/exited/";

    /** How long writing a mark at exit may take: a dead store must not hold up the JVM's exit. */
    private static final Duration WRITE_WAIT = Duration.ofSeconds(1);

    private static final List<NativeProcessGroup> OPEN = new ArrayList<>();
    private static ExecutorService calls;

    private ExitMarks() {}

    /** Marks {@code group}'s rank when the JVM exits while the group is open. */
    static synchronized void register(NativeProcessGroup group) {
        ensureCalls();
        OPEN.add(group);
    }

    /** Marks {@code group}'s rank now (it is closing its group) and stops watching it. */
    static void markClosing(NativeProcessGroup group) {
        boolean open;
        synchronized (ExitMarks.class) {
            open = OPEN.remove(group);
        }
        if (open) {
            mark(List.of(group));
        }
    }

    private static void markAllOpen() {
        List<NativeProcessGroup> groups;
        synchronized (ExitMarks.class) {
            groups = new ArrayList<>(OPEN);
            OPEN.clear();
        }
        mark(groups);
    }

    private static void mark(List<NativeProcessGroup> groups) {
        if (groups.isEmpty()) {
            return;
        }
        byte[] pid = Long.toString(ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8);
        Future<?> write = calls.submit(() -> {
            for (NativeProcessGroup g : groups) {
                try {
                    g.store().set(KEY + g.rank(), pid);
                } catch (RuntimeException e) {
                    // the store is gone: the peers will read "unknown", as before marks existed
                }
            }
        });
        try {
            write.get(WRITE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            write.cancel(true);
        }
    }

    /**
     * Whether group rank {@code peerRank}, whose connection closed (a {@link PeerLostException} with
     * reason CLOSED), exited or closed its group (TRUE), ended without either, i.e. was killed or
     * crashed (FALSE), or null when the rank is unknown or the store did not answer within {@code wait}.
     * The caller waited for the failure, so a peer that marked itself did so before its connection closed.
     */
    public static Boolean peerExited(ProcessGroup group, int peerRank, Duration wait) {
        if (!(group instanceof NativeProcessGroup g) || peerRank < 0) {
            return null;
        }
        return bounded(() -> g.store().check(List.of(KEY + peerRank)), wait);
    }

    /**
     * Publishes, for the peers' error messages, what this rank of {@code group} uses under
     * {@code name} (e.g. DDP's communication hook); best effort, bounded by the exit-mark wait.
     */
    public static void publishNote(ProcessGroup group, String name, String value) {
        if (group instanceof NativeProcessGroup g) {
            ensureCalls();
            bounded(() -> {
                g.store().set(NOTE_KEY + name + "/" + g.rank(), value.getBytes(StandardCharsets.UTF_8));
                return Boolean.TRUE;
            }, WRITE_WAIT);
        }
    }

    /** What group rank {@code rank} published under {@code name} ({@link #publishNote}), or null if nothing came within {@code wait}. */
    public static String note(ProcessGroup group, String name, int rank, Duration wait) {
        if (!(group instanceof NativeProcessGroup g) || rank < 0) {
            return null;
        }
        String key = NOTE_KEY + name + "/" + rank;
        return bounded(() -> g.store().check(List.of(key)) ? new String(g.store().get(key), StandardCharsets.UTF_8) : null,
                wait);
    }

    private static final String NOTE_KEY = "ddp4j/note/";

    private static synchronized void ensureCalls() {
        if (calls == null) {
            calls = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "ddp4j-exit-marks");
                t.setDaemon(true);
                return t;
            });
            Runtime.getRuntime().addShutdownHook(new Thread(ExitMarks::markAllOpen, "ddp4j-exit-marks-shutdown"));
        }
    }

    /** A store call on the marks' thread, given up after {@code wait}: null then, or when it threw. */
    private static <T> T bounded(java.util.concurrent.Callable<T> call, Duration wait) {
        ExecutorService exec;
        synchronized (ExitMarks.class) {
            exec = calls;
        }
        if (exec == null) {
            return null;
        }
        Future<T> result = exec.submit(call);
        try {
            return result.get(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            result.cancel(true);
            return null;
        }
    }
}
