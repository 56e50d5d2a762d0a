package org.ddp4j.distributed;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

    /** Gloo's message for a peer whose connection closed: "peer rank 1 may have died or closed its process group". */
    private static final Pattern CLOSED_PEER = Pattern.compile("peer rank (\\d+) may have died or closed its process group");

    private static final List<NativeProcessGroup> OPEN = new ArrayList<>();
    private static ExecutorService calls;

    private ExitMarks() {}

    /** Marks {@code group}'s rank when the JVM exits while the group is open. */
    static synchronized void register(NativeProcessGroup group) {
        if (calls == null) {
            calls = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "ddp4j-exit-marks");
                t.setDaemon(true);
                return t;
            });
            Runtime.getRuntime().addShutdownHook(new Thread(ExitMarks::markAllOpen, "ddp4j-exit-marks-shutdown"));
        }
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
     * For a failure whose message says a peer's connection closed ({@link #CLOSED_PEER}): whether that
     * peer exited or closed its group (TRUE), ended without either, i.e. was killed or crashed (FALSE),
     * or null when the message names no such peer or the store did not answer within {@code wait}.
     * The caller waited for the failure, so a peer that marked itself did so before its connection closed.
     */
    public static Boolean peerExited(ProcessGroup group, String message, Duration wait) {
        Matcher m = CLOSED_PEER.matcher(String.valueOf(message));
        if (!(group instanceof NativeProcessGroup g) || !m.find()) {
            return null;
        }
        String key = KEY + m.group(1);
        ExecutorService exec;
        synchronized (ExitMarks.class) {
            exec = calls;
        }
        if (exec == null) {
            return null;
        }
        Future<Boolean> read = exec.submit(() -> g.store().check(List.of(key)));
        try {
            return read.get(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            read.cancel(true);
            return null;
        }
    }
}
