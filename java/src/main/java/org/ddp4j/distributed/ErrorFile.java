package org.ddp4j.distributed;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.internal.Setting;
import org.ddp4j.internal.AtomicFiles;

/**
 * A worker's own record of its failure, written where its launcher says ({@code DDP4J_ERROR_FILE}), in JSON,
 * atomically: torchelastic's error file ({@code TORCHELASTIC_ERROR_FILE}, the {@code @record}
 * decorator). The launcher ({@code ddp4j-run}), {@code Spawn} and the Spark integration set the
 * variable for each worker and read the file when it fails; with none set, nothing is written.
 *
 * <p>A worker records its failure through {@link #record(Throwable)} — a program that catches its
 * exception to print it and exit calls it in the catch — or through the uncaught-exception
 * handler that {@link #installHandler()} sets ({@code initProcessGroup} installs it in every
 * worker). The first failure recorded is kept: later ones are its consequences.
 *
 * <p>Format (version {@value #FORMAT_VERSION}): an object with {@code version}, {@code type},
 * {@code message}, {@code fromPeer}, {@code peerRank}, {@code timeout}, {@code op},
 * {@code timeoutMillis}, {@code packetLoss}, {@code stack} (an array of lines),
 * {@code timestampMillis}, {@code rank}, {@code pid}: the fields of {@link WorkerError}.
 */
public final class ErrorFile {

    /** The environment variable naming the file a worker records its failure in. */
    public static final String ENV = Setting.ERROR_FILE.variable();

    /** The version written in every file; a reader refuses other versions (it falls back to stderr). */
    public static final int FORMAT_VERSION = 1;

    /** The most stack lines kept: the frames that matter are at the top of each cause. */
    private static final int MAX_STACK_LINES = 200;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static boolean handlerInstalled;

    private ErrorFile() {}

    /**
     * Records {@code failure} in the file {@code DDP4J_ERROR_FILE} names, unless a failure is recorded there
     * already or the variable is unset. Never throws: a worker that cannot write its file still
     * fails as it would (the launcher falls back to its stderr).
     *
     * @param failure what made the worker fail
     * @return whether the file was written
     */
    public static boolean record(Throwable failure) {
        String path = System.getenv(ENV);
        return path != null && !path.isBlank() && record(failure, Path.of(path));
    }

    /** {@link #record(Throwable)} into {@code file}, whatever {@code DDP4J_ERROR_FILE} says. */
    static synchronized boolean record(Throwable failure, Path file) {
        if (failure == null || Files.exists(file)) {
            return false;
        }
        try {
            byte[] json = JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(describe(failure));
            AtomicFiles.write(file, channel -> {
                ByteBuffer bytes = ByteBuffer.wrap(json);
                while (bytes.hasRemaining()) {
                    channel.write(bytes);
                }
            });
            return true;
        } catch (IOException | RuntimeException e) {
            System.err.println("ddp4j: could not record this worker's failure in " + file + ": " + e);
            return false;
        }
    }

    /**
     * Records every uncaught exception ({@link #record}) before the handler that was there runs
     * (the JVM's prints the stack trace). Once per JVM; does nothing when {@code DDP4J_ERROR_FILE} is unset.
     */
    public static synchronized void installHandler() {
        if (handlerInstalled || System.getenv(ENV) == null) {
            return;
        }
        handlerInstalled = true;
        Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((thread, e) -> {
            record(e);
            if (previous != null) {
                previous.uncaughtException(thread, e);
            } else {
                System.err.print("Exception in thread \"" + thread.getName() + "\" ");
                e.printStackTrace();
            }
        });
    }

    /**
     * The failure recorded in {@code file}, or null when there is none, it is unreadable or of
     * another format version (the caller then falls back to the worker's stderr).
     */
    public static WorkerError read(Path file) {
        if (file == null || !Files.isRegularFile(file)) {
            return null;
        }
        try {
            WorkerError e = JSON.readValue(file.toFile(), WorkerError.class);
            return e.version() == FORMAT_VERSION && e.type() != null ? e : null;
        } catch (IOException | UncheckedIOException e) {
            return null;
        }
    }

    /** The fields of {@link WorkerError} for {@code failure}, in the file's order. */
    static Map<String, Object> describe(Throwable failure) {
        DistributedException distributed = distributedIn(failure);
        int peerRank = -1;
        if (distributed instanceof PeerLostException p) {
            peerRank = p.peerRank();
        } else if (distributed instanceof CollectiveMismatchException m) {
            peerRank = m.peerRank();
        } else if (distributed instanceof DistributedTimeoutException t) {
            peerRank = t.waitedForRank();
        }
        DistributedTimeoutException timeout = distributed instanceof DistributedTimeoutException t ? t : null;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("version", FORMAT_VERSION);
        out.put("type", failure.getClass().getName());
        out.put("message", failure.getMessage() == null ? "" : failure.getMessage());
        out.put("fromPeer", distributed != null);
        out.put("peerRank", peerRank);
        out.put("timeout", timeout != null);
        out.put("op", distributed == null ? null : distributed.op());
        out.put("timeoutMillis", timeout != null && timeout.timeout() != null ? timeout.timeout().toMillis() : -1);
        out.put("packetLoss", timeout != null && timeout.packetLoss());
        out.put("stack", stackLines(failure));
        out.put("timestampMillis", System.currentTimeMillis());
        out.put("rank", rankFromEnvironment());
        out.put("pid", ProcessHandle.current().pid());
        return out;
    }

    /** The first DistributedException in the cause chain (the failure itself first), or null. */
    private static DistributedException distributedIn(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof DistributedException d) {
                return d;
            }
        }
        return null;
    }

    private static List<String> stackLines(Throwable failure) {
        List<String> lines = new ArrayList<>();
        for (Throwable t = failure; t != null && lines.size() < MAX_STACK_LINES; t = t.getCause() == t ? null : t.getCause()) {
            lines.add((t == failure ? "" : "Caused by: ") + t);
            for (StackTraceElement frame : t.getStackTrace()) {
                if (lines.size() >= MAX_STACK_LINES) {
                    break;
                }
                lines.add("\tat " + frame);
            }
        }
        return lines;
    }

    private static int rankFromEnvironment() {
        try {
            return Integer.parseInt(System.getenv().getOrDefault("RANK", "-1").strip());
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
