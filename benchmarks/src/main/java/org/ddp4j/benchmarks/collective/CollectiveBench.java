package org.ddp4j.benchmarks.collective;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.VerboseMode;
import org.openjdk.jmh.util.Statistics;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs a {@link CollectiveBenchmark} with JMH on every rank of a launched job, size by size, and
 * prints nccl-tests' table from rank 0:
 *
 * <pre>
 * scripts/ddp4j-run --nproc-per-node 2 java -cp benchmarks/target/benchmarks.jar \
 *     org.ddp4j.benchmarks.collective.CollectiveBench --op allreduce --json allreduce.json
 * </pre>
 *
 * <p>Sizes are 8 B x 4^k from {@code --min-bytes} to {@code --max-bytes} (8 B to 128 MiB by
 * default), or the list given with {@code --sizes} (e.g. {@code 8,1K,64K,1M,32M}). Each size is one JMH run with its own batch size (calls per iteration, the same on
 * every rank: {@link #callsPerIteration}), so that small messages are timed over many calls and
 * large ones over a few. JMH's score (and its JSON) is µs per iteration, i.e. per batch; the
 * table divides it by the batch size to give µs per call. Ranks other than 0 print nothing (JMH silent,
 * no table, no JSON). JMH's lock file is ignored ({@code jmh.ignoreLock}): the ranks are several
 * JMH runners on one host by design. With {@code --forks 1} (the default) every size runs in a new
 * JVM that inherits the launcher's environment and joins a new group (its own key space in the
 * launcher's store); {@code --forks 0} runs in this JVM, re-initialising the group per size.
 *
 * <p>Rank 0 ends each size with a {@link CollectiveRow#resultLine()} line (for scripts) and, with
 * {@code --json}, writes JMH's JSON results of all sizes as one array.
 */
@Command(name = "CollectiveBench", mixinStandardHelpOptions = true,
        description = "JMH benchmark of a collective over every rank of a launched job (nccl-tests' columns).")
public final class CollectiveBench implements Callable<Integer> {
    @Option(names = "--op", description = "allreduce, broadcast, allgather, barrier, reduce, reducescatter or sendrecv"
            + " (default ${DEFAULT-VALUE})")
    String op = "allreduce";

    @Option(names = "--benchmark", description = "a CollectiveBenchmark subclass to run instead of --op (a class name)")
    String benchmarkClass;

    @Option(names = "--backend", description = "process-group backend (default ${DEFAULT-VALUE}); the transport follows the environment, e.g. DDP4J_SHM")
    String backend = "gloo";

    @Option(names = "--min-bytes", description = "smallest message (default ${DEFAULT-VALUE})")
    long minBytes = 8;

    @Option(names = "--max-bytes", description = "largest message (default ${DEFAULT-VALUE} = 128 MiB)")
    long maxBytes = 128L << 20;

    @Option(names = "--sizes", split = ",", paramLabel = "SIZE",
            description = "message sizes instead of 8 B x 4^k from --min-bytes to --max-bytes: bytes, or with K, M or G"
                    + " (binary: 64K = 65536), comma-separated, e.g. 8,1K,64K,1M,32M")
    List<String> sizes;

    @Option(names = "--warmup", description = "warm-up iterations per size, at least (default ${DEFAULT-VALUE})")
    int warmup = 2;

    @Option(names = "--warmup-ms", description = "warm-up per size, at least, in ms of the call model (default ${DEFAULT-VALUE});"
            + " every size runs in a fresh JVM, whose JIT compiles for about a second")
    double warmupMs = 1000;

    @Option(names = "--iterations", description = "measured iterations per size (default ${DEFAULT-VALUE})")
    int iterations = 10;

    @Option(names = "--iteration-ms", description = "aimed length of one iteration, which sets the calls per iteration (default ${DEFAULT-VALUE})")
    double iterationMs = 30;

    @Option(names = "--forks", description = "JMH forks per size: 1 = a new JVM per size, 0 = this JVM (default ${DEFAULT-VALUE})")
    int forks = 1;

    @Option(names = "--json", description = "rank 0 writes JMH's JSON results of every size here")
    Path json;

    @Option(names = "--jmh-output", description = "show JMH's own progress output on rank 0")
    boolean jmhOutput;

    /** Runs the command line; exits non-zero on a failed benchmark. */
    public static void main(String[] args) {
        CommandLine cli = new CommandLine(new CollectiveBench());
        // A wrong option value or a job too small for the op: one line saying so, not a stack trace.
        cli.setExecutionExceptionHandler((e, line, parsed) -> {
            if (e instanceof IllegalArgumentException) {
                line.getErr().println("CollectiveBench: " + e.getMessage());
                return 2;
            }
            throw e;
        });
        System.exit(cli.execute(args));
    }

    /**
     * Runs {@code benchmark} with the command line's options ({@code --backend}, {@code --min-bytes},
     * ...; {@code --op} is ignored) and returns one row per size (on every rank; only rank 0 prints).
     * Call it on every rank of the job, with the same options.
     *
     * @throws IllegalArgumentException for an unknown option
     * @throws IllegalStateException if a JMH run fails (the message has JMH's, e.g. a collective's error)
     */
    public static List<CollectiveRow> run(Class<? extends CollectiveBenchmark> benchmark, String... options) {
        CollectiveBench bench = new CollectiveBench();
        try {
            new CommandLine(bench).parseArgs(options);
        } catch (CommandLine.ParameterException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        return bench.measure(benchmark, opName(benchmark));
    }

    @Override
    public Integer call() throws Exception {
        Class<? extends CollectiveBenchmark> cls = benchmarkClass != null ? load(benchmarkClass) : builtIn(op);
        measure(cls, benchmarkClass != null ? opName(cls) : op.toLowerCase(Locale.ROOT));
        return 0;
    }

    /**
     * Calls per iteration for a message of {@code bytes}: the iteration's aimed length over a model
     * of one call (10 µs + 0.25 ns per byte, i.e. 4 GB/s: a little slower than shared memory on a
     * small machine, so that a large message still gets a few calls per iteration and is timed back to
     * back as in nccl-tests, not once after each barrier), between 1 and 10,000.
     * Deterministic, so every rank computes the same batch.
     */
    static int callsPerIteration(long bytes, double iterationMs) {
        return (int) Math.max(1, Math.min(10_000, Math.floor(iterationMs * 1e6 / modelCallNs(bytes))));
    }

    /** The call model of {@link #callsPerIteration}: 10 µs + 0.25 ns per byte. */
    private static double modelCallNs(long bytes) {
        return 10_000 + 0.25 * bytes;
    }

    /**
     * Warm-up iterations for a message of {@code bytes} run {@code calls} at a time: at least
     * {@code minimum}, and enough for {@code warmupMs} of the call model. Large messages need the
     * second: two iterations of 32 MiB last ~40 ms, while the fresh JVM's JIT compiles for about a
     * second on the same cores (32 MiB at 2 ranks: 5.6-5.8 ms a call after 2 warm-up iterations,
     * 5.0 after 30). Deterministic, so every rank computes the same count.
     */
    static int warmupIterations(long bytes, int calls, int minimum, double warmupMs) {
        double iterationNs = calls * modelCallNs(bytes);
        return (int) Math.max(minimum, Math.min(100_000, Math.ceil(warmupMs * 1e6 / iterationNs)));
    }

    /**
     * The sizes to run: {@code listed} parsed by {@link #parseSize} in the order given, or else 8 B x 4^k
     * within {@code [minBytes, maxBytes]}.
     *
     * @throws IllegalArgumentException for a size that is not a positive number of bytes
     */
    static List<Long> messageSizes(long minBytes, long maxBytes, List<String> listed) {
        List<Long> out = new ArrayList<>();
        if (listed != null && !listed.isEmpty()) {
            for (String s : listed) {
                out.add(parseSize(s));
            }
            return out;
        }
        for (long b = 8; b <= maxBytes; b *= 4) {
            if (b >= minBytes) {
                out.add(b);
            }
        }
        return out;
    }

    /**
     * {@code "65536"}, {@code "64K"}, {@code "1M"} or {@code "2G"} (binary units, case-insensitive) in bytes.
     *
     * @throws IllegalArgumentException for anything else, or a size below 1 byte
     */
    static long parseSize(String text) {
        String s = text.trim().toUpperCase(Locale.ROOT);
        int shift = s.endsWith("K") ? 10 : s.endsWith("M") ? 20 : s.endsWith("G") ? 30 : 0;
        String digits = shift == 0 ? s : s.substring(0, s.length() - 1);
        long value;
        try {
            value = Long.parseLong(digits);
        } catch (NumberFormatException e) {
            value = -1;
        }
        if (value < 1 || value > (Long.MAX_VALUE >> shift)) {
            throw new IllegalArgumentException("--sizes: \"" + text + "\" is not a message size; give bytes (65536)"
                    + " or a whole number with K, M or G (64K), e.g. --sizes 8,1K,64K,1M,32M");
        }
        return value << shift;
    }

    /** Every size in turn; rank 0 prints the table and writes the JSON. */
    List<CollectiveRow> measure(Class<? extends CollectiveBenchmark> cls, String name) {
        // Several JMH runners on one host (one per rank) is the point here, not a mistake to guard against.
        System.setProperty("jmh.ignoreLock", "true");
        Map<String, String> env = System.getenv();
        int rank = intEnv(env, "RANK", 0);
        int ranks = intEnv(env, "WORLD_SIZE", 1);
        CollectiveBenchmark probe = instantiate(cls);
        if (ranks < probe.minimumRanks()) {
            throw new IllegalArgumentException(probe.tooFewRanks(ranks));
        }
        List<Long> sizes = probe.sized() ? messageSizes(minBytes, maxBytes, this.sizes) : List.of(0L);
        boolean report = rank == 0;
        if (report) {
            System.out.printf(Locale.ROOT, "# ddp4j %s: backend=%s ranks=%d DDP4J_SHM=%s forks=%d warmup=%d (and >= %.0f ms) iterations=%d"
                    + " (JMH SingleShotTime, time = median over iterations of µs per call)%n", name, backend, ranks,
                    env.getOrDefault("DDP4J_SHM", "unset"), forks, warmup, warmupMs, iterations);
            System.out.println(CollectiveRow.header());
            System.out.flush();
        }
        List<CollectiveRow> rows = new ArrayList<>();
        List<String> jsonParts = new ArrayList<>();
        for (long bytes : sizes) {
            int calls = callsPerIteration(bytes, iterationMs);
            int warmupIterations = warmupIterations(bytes, calls, warmup, warmupMs);
            Path partial = null;
            ChainedOptionsBuilder options = new OptionsBuilder()
                    .include("^" + Pattern.quote(cls.getName()) + "\\.collective$")
                    .param("backend", backend)
                    .param("bytes", Long.toString(bytes))
                    .warmupIterations(warmupIterations).warmupBatchSize(calls)
                    .measurementIterations(iterations).measurementBatchSize(calls)
                    .forks(forks).threads(1)
                    .shouldFailOnError(true)
                    .verbosity(report && jmhOutput ? VerboseMode.NORMAL : VerboseMode.SILENT);
            try {
                if (report && json != null) {
                    partial = Files.createTempFile("ddp4j-collective-", ".json");
                    options.result(partial.toString()).resultFormat(ResultFormatType.JSON);
                }
                Collection<RunResult> results = new Runner(options.build()).run();
                if (results.isEmpty()) {
                    throw new IllegalStateException(name + " at " + bytes + " B: JMH produced no result (did the benchmark"
                            + " class compile with JMH's annotation processor?)");
                }
                // JMH's single-shot score is the time of the whole batch (µs per iteration), not per call.
                Statistics stats = results.iterator().next().getPrimaryResult().getStatistics();
                CollectiveRow row = new CollectiveRow(name, backend, ranks, probe.reportedBytes(bytes, ranks),
                        probe.sized() ? probe.reportedBytes(bytes, ranks) / Float.BYTES : 0, probe.redop(), calls,
                        (int) stats.getN(), stats.getPercentile(50) / calls, stats.getMean() / calls,
                        probe.busBandwidthFactor(ranks));
                rows.add(row);
                if (partial != null) {
                    jsonParts.add(Files.readString(partial, StandardCharsets.UTF_8));
                }
                if (report) {
                    System.out.println(row.tableLine());
                    System.out.println(row.resultLine());
                    System.out.flush();
                }
            } catch (RunnerException | IOException e) {
                throw new IllegalStateException(name + " at " + bytes + " B failed: " + e.getMessage(), e);
            } finally {
                deleteQuietly(partial);
            }
        }
        if (report && json != null) {
            writeJson(json, jsonParts);
        }
        return rows;
    }

    /** JMH writes one JSON array per run; this joins the arrays into one, as a single JMH run would. */
    static void writeJson(Path target, List<String> arrays) {
        List<String> bodies = new ArrayList<>();
        for (String a : arrays) {
            String s = a.trim();
            if (s.startsWith("[") && s.endsWith("]")) {
                s = s.substring(1, s.length() - 1).trim();
            }
            if (!s.isEmpty()) {
                bodies.add(s);
            }
        }
        try {
            if (target.getParent() != null) {
                Files.createDirectories(target.getParent());
            }
            Files.writeString(target, "[\n" + String.join(",\n", bodies) + "\n]\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot write " + target + ": " + e, e);
        }
    }

    /** The benchmark class of a built-in {@code --op} name (case-insensitive). */
    static Class<? extends CollectiveBenchmark> builtIn(String op) {
        switch (op.toLowerCase(Locale.ROOT)) {
            case "allreduce":
                return AllReduceBenchmark.class;
            case "broadcast":
                return BroadcastBenchmark.class;
            case "allgather":
                return AllGatherBenchmark.class;
            case "barrier":
                return BarrierBenchmark.class;
            case "reduce":
                return ReduceBenchmark.class;
            case "reducescatter":
                return ReduceScatterBenchmark.class;
            case "sendrecv":
                return SendRecvBenchmark.class;
            default:
                throw new IllegalArgumentException("unknown --op \"" + op + "\": allreduce, broadcast, allgather, barrier,"
                        + " reduce, reducescatter or sendrecv; or --benchmark your.CollectiveBenchmarkSubclass");
        }
    }

    private static Class<? extends CollectiveBenchmark> load(String name) {
        try {
            return Class.forName(name).asSubclass(CollectiveBenchmark.class);
        } catch (ClassNotFoundException | ClassCastException e) {
            throw new IllegalArgumentException("--benchmark " + name + ": not a CollectiveBenchmark subclass on the class"
                    + " path (" + e + ")", e);
        }
    }

    /** The class name without "Benchmark", lower case: AllReduceBenchmark becomes "allreduce". */
    private static String opName(Class<?> cls) {
        return cls.getSimpleName().replaceFirst("Benchmark$", "").toLowerCase(Locale.ROOT);
    }

    private static CollectiveBenchmark instantiate(Class<? extends CollectiveBenchmark> cls) {
        try {
            return cls.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException(cls.getName() + " needs a public no-argument constructor (JMH needs one too)", e);
        }
    }

    private static int intEnv(Map<String, String> env, String name, int fallback) {
        String v = env.get(name);
        try {
            return v == null || v.isBlank() ? fallback : Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalStateException(name + "=\"" + v + "\" is not a number", e);
        }
    }

    private static void deleteQuietly(Path p) {
        if (p != null) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                // a leftover temporary file is harmless
            }
        }
    }
}
