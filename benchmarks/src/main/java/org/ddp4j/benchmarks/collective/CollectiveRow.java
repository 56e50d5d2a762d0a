package org.ddp4j.benchmarks.collective;

import java.util.Locale;

/**
 * One size of one collective, in nccl-tests' columns: size (bytes), count (float32 elements),
 * type, redop, time (µs per call), algbw = size / time and busbw = algbw x the collective's factor
 * (both in GB/s, 10^9 bytes per second). The time is the median over the measured JMH iterations
 * of each iteration's time per call; the mean is kept too.
 *
 * @param op the benchmark's name, e.g. {@code allreduce}
 * @param backend the process-group backend, e.g. {@code gloo}
 * @param ranks the world size
 * @param bytes the size as nccl-tests reports it (all-gather: the whole output)
 * @param count float32 elements in {@code bytes}
 * @param redop the reduction, or {@code none}
 * @param calls calls per iteration (JMH's batch size), the same on every rank
 * @param iterations measured iterations
 * @param medianUs median over iterations of µs per call
 * @param meanUs mean over iterations of µs per call
 * @param busFactor busbw / algbw
 */
public record CollectiveRow(String op, String backend, int ranks, long bytes, long count, String redop, int calls,
        int iterations, double medianUs, double meanUs, double busFactor) {

    /** size / time in GB/s (10^9 B/s), from the median time. */
    public double algbw() {
        return medianUs > 0 ? bytes / medianUs / 1e3 : 0;
    }

    /** algbw x the collective's bus factor, in GB/s. */
    public double busbw() {
        return algbw() * busFactor;
    }

    /** nccl-tests' two header lines, with this harness's extra columns. */
    public static String header() {
        return String.format(Locale.ROOT, "#%13s %12s %7s %6s %12s %9s %9s %7s %12s%n#%13s %12s %7s %6s %12s %9s %9s %7s %12s",
                "size", "count", "type", "redop", "time", "algbw", "busbw", "calls", "mean",
                "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "/iter", "(us)");
    }

    /** This row under {@link #header()}. */
    public String tableLine() {
        return String.format(Locale.ROOT, " %13d %12d %7s %6s %12.2f %9.4f %9.4f %7d %12.2f", bytes, count, "float", redop,
                medianUs, algbw(), busbw(), calls, meanUs);
    }

    /** One machine-readable line: {@code result op=... backend=... ranks=... bytes=... median_us=... busbw=...}. */
    public String resultLine() {
        return String.format(Locale.ROOT, "result op=%s backend=%s ranks=%d bytes=%d count=%d median_us=%.3f mean_us=%.3f"
                + " algbw=%.6f busbw=%.6f calls=%d iterations=%d", op, backend, ranks, bytes, count, medianUs, meanUs, algbw(),
                busbw(), calls, iterations);
    }
}
