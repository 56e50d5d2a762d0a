package org.ddp4j.launch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.OptionalInt;

/**
 * The intra-op threads each worker gets by default ({@link org.ddp4j.tensor.Threads}), worked
 * out by the launcher the way each worker's native library works it out
 * (native/include/ddp4j/parallel.h), so the launcher can say it once on stderr:
 * {@code OMP_NUM_THREADS} when the user set it to a positive integer, else the CPUs the launcher
 * may run on (its workers inherit its CPU affinity) divided by the workers on this node
 * ({@code LOCAL_WORLD_SIZE}), at least 1. Unlike torchrun, the launcher sets no thread variable:
 * a node's ranks share its cores instead of taking one each.
 */
final class WorkerThreads {

    /** The start of the launcher's line, for scripts that look for it. */
    static final String NOTICE_PREFIX = "intra-op threads per worker: ";

    private WorkerThreads() {}

    /**
     * {@code OMP_NUM_THREADS} as parallel.h reads it: a positive integer, or the first entry of a
     * comma list ({@code 4,2}); empty when unset, blank or malformed (the worker then warns).
     */
    static OptionalInt ompNumThreads(String value) {
        if (value == null) {
            return OptionalInt.empty();
        }
        String v = value.strip();
        int comma = v.indexOf(',');
        if (comma >= 0) {
            v = v.substring(0, comma).strip();
        }
        try {
            int n = Integer.parseInt(v);
            return n >= 1 && n <= 1 << 20 ? OptionalInt.of(n) : OptionalInt.empty();
        } catch (NumberFormatException e) {
            return OptionalInt.empty();
        }
    }

    /**
     * The CPUs this process may run on: {@code Cpus_allowed_list} of /proc/self/status (its
     * sched_getaffinity mask), or {@link Runtime#availableProcessors()} where that cannot be read.
     */
    static int affinityCpus() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Cpus_allowed_list:")) {
                    return Math.max(1, countCpus(line.substring(line.indexOf(':') + 1)));
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or an unexpected format: fall back below
        }
        return Runtime.getRuntime().availableProcessors();
    }

    /** The CPUs in a list such as {@code 0-3,8,10-11}. */
    static int countCpus(String list) {
        int n = 0;
        for (String part : list.strip().split(",")) {
            if (part.isBlank()) {
                continue;
            }
            int dash = part.indexOf('-');
            n += dash < 0 ? 1 : Integer.parseInt(part.substring(dash + 1).strip()) - Integer.parseInt(part.substring(0, dash).strip()) + 1;
        }
        return n;
    }

    /** The threads each of {@code workers} workers on a node of {@code cpus} CPUs gets from {@code env}. */
    static int perWorker(Map<String, String> env, int workers, int cpus) {
        return ompNumThreads(env.get("OMP_NUM_THREADS")).orElse(Math.max(1, cpus / Math.max(1, workers)));
    }

    /**
     * The launcher's line, e.g. {@code intra-op threads per worker: 4 (8 CPUs / 2 workers on this
     * node; set OMP_NUM_THREADS to choose)} or {@code intra-op threads per worker: 3 (OMP_NUM_THREADS=3)},
     * which adds {@code ; 2 x 3 threads oversubscribe the 4 CPUs} when the workers' threads
     * outnumber the CPUs.
     */
    static String notice(Map<String, String> env, int workers, int cpus) {
        String omp = env.get("OMP_NUM_THREADS");
        int n = perWorker(env, workers, cpus);
        if (ompNumThreads(omp).isPresent()) {
            String over = (long) n * workers > cpus
                    ? "; " + workers + " x " + n + " threads oversubscribe the " + cpus + " CPUs" : "";
            return NOTICE_PREFIX + n + " (OMP_NUM_THREADS=" + omp.strip() + over + ")";
        }
        String ignored = omp == null || omp.isBlank() ? ""
                : "OMP_NUM_THREADS=\"" + omp + "\" is not a positive integer and is ignored; ";
        String split = workers == 1 ? cpus + " CPUs" : cpus + " CPUs / " + workers + " workers on this node";
        return NOTICE_PREFIX + n + " (" + ignored + split + "; set OMP_NUM_THREADS to choose)";
    }
}
