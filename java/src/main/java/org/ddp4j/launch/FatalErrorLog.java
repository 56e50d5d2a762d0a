package org.ddp4j.launch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Finds the fatal-error log ({@code hs_err_pid<PID>.log}) HotSpot writes when a JVM dies of a
 * fatal error (a SIGSEGV in native code, an internal error, native memory exhausted) just before
 * it aborts with SIGABRT (exit code 134), so that the launcher can name that file instead of the
 * bare signal.
 *
 * <p>HotSpot tries, in order: the {@code -XX:ErrorFile} pattern ({@code %p} the pid, {@code %%} a
 * percent sign, relative to the working directory), then {@code hs_err_pid<PID>.log} in the JVM's
 * working directory, then in {@code /tmp}; {@link #find} looks in the same places. The launcher
 * gives its Java workers {@code -XX:ErrorFile=<DDP4J_DEBUG_DIR>/hs_err_pid%p.log}
 * ({@link WorkerCommand#argv(List, java.util.Map, int)}), next to their flight-recorder dumps.
 */
final class FatalErrorLog {
    /** The JVM option that says where the fatal-error log goes. */
    static final String ERROR_FILE_FLAG = "-XX:ErrorFile=";
    /** HotSpot's file name for the log, as an {@code -XX:ErrorFile} pattern. */
    static final String FILE_PATTERN = "hs_err_pid%p.log";
    /** Where HotSpot writes the log when neither the pattern nor the working directory can take it. */
    static final Path TEMP_DIRECTORY = Path.of("/tmp");

    private FatalErrorLog() {}

    /**
     * The option that puts a JVM's fatal-error log in {@code dir}:
     * {@code -XX:ErrorFile=<absolute dir>/hs_err_pid%p.log} (a {@code %} in the folder's name doubled,
     * as HotSpot reads the pattern). HotSpot does not create the folder; when it is missing the log
     * goes to the working directory, and {@link #find} looks there too.
     */
    static String option(Path dir) {
        return ERROR_FILE_FLAG + dir.toAbsolutePath().normalize().toString().replace("%", "%%") + "/" + FILE_PATTERN;
    }

    /**
     * The {@code -XX:ErrorFile} pattern in a JVM command line, or null when it has none. With several,
     * the last, which is the one the JVM uses.
     *
     * @param argv the command line the JVM was started with, e.g. a worker's from {@link WorkerCommand#argv}
     */
    static String errorFile(List<String> argv) {
        String pattern = null;
        for (String arg : argv) {
            if (arg.startsWith(ERROR_FILE_FLAG)) {
                pattern = arg.substring(ERROR_FILE_FLAG.length());
            }
        }
        return pattern;
    }

    /**
     * The file an {@code -XX:ErrorFile} pattern names for process {@code pid}: {@code %p} becomes
     * the pid and {@code %%} a {@code %}, as in HotSpot; a relative result is taken from
     * {@code workingDirectory}.
     */
    static Path expand(String pattern, long pid, Path workingDirectory) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < pattern.length(); i++) {
            char c = pattern.charAt(i);
            if (c == '%' && i + 1 < pattern.length() && pattern.charAt(i + 1) == 'p') {
                s.append(pid);
                i++;
            } else if (c == '%' && i + 1 < pattern.length() && pattern.charAt(i + 1) == '%') {
                s.append('%');
                i++;
            } else {
                s.append(c);
            }
        }
        return workingDirectory.resolve(s.toString());
    }

    /**
     * The fatal-error log HotSpot wrote for the JVM whose process id was {@code pid}, or null when it
     * wrote none (the process died otherwise: a {@code kill -6}, a native {@code abort()} outside the
     * JVM's handler, or a log HotSpot could not write anywhere).
     *
     * @param pid the JVM's process id ({@link Process#pid()})
     * @param workingDirectory the JVM's working directory (for the launcher's workers: the launcher's own)
     * @param errorFile the {@code -XX:ErrorFile} pattern the JVM ran with ({@link #errorFile(List)}), or null
     * @param notBeforeMillis a file last modified before this time (milliseconds since the epoch) is a
     *     log of an earlier process that had the same pid, and is ignored; 0 accepts any
     * @throws IllegalArgumentException when {@code pid} is not positive
     */
    static Path find(long pid, Path workingDirectory, String errorFile, long notBeforeMillis) {
        if (pid <= 0) {
            throw new IllegalArgumentException("pid must be positive, got " + pid);
        }
        String name = FILE_PATTERN.replace("%p", Long.toString(pid));
        List<Path> candidates = new ArrayList<>();
        if (errorFile != null && !errorFile.isEmpty()) {
            candidates.add(expand(errorFile, pid, workingDirectory));
        }
        candidates.add(workingDirectory.resolve(name));
        candidates.add(TEMP_DIRECTORY.resolve(name));
        for (Path p : candidates) {
            try {
                if (Files.isRegularFile(p) && Files.getLastModifiedTime(p).toMillis() >= notBeforeMillis) {
                    return p;
                }
            } catch (IOException e) {
                // gone or unreadable since the check: not a log we can point at
            }
        }
        return null;
    }
}
