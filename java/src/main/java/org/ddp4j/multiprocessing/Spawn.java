package org.ddp4j.multiprocessing;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DumpSignal;
import org.ddp4j.distributed.ErrorFile;
import org.ddp4j.internal.Setting;

/**
 * Starts N local worker JVMs that each run a static method with their index, as
 * {@code torch.multiprocessing.spawn(fn, args, nprocs, join)}:
 *
 * <pre>{@code
 * Spawn.of(MyTrainer::train).nprocs(2).env("MASTER_ADDR", "127.0.0.1").env("MASTER_PORT", "8888")
 *         .args("--epochs", "2").run();            // MyTrainer.train(0, args) and train(1, args) in two JVMs
 * }</pre>
 *
 * <p>Each worker is a new JVM with this JVM's java binary, class path, system properties and
 * module flags, plus the worker defaults of the launcher (serial GC, a heap share, C1 JIT) unless
 * {@code DDP4J_JAVA_OPTS} (whose words are added) decides them. Its environment is this JVM's
 * plus {@link #env}, {@code LOCAL_RANK=index} and {@code LOCAL_WORLD_SIZE=nprocs}, so its intra-op
 * threads default to this machine's CPUs divided by nprocs ({@link org.ddp4j.tensor.Threads}), as
 * a launched worker's do; an {@code OMP_NUM_THREADS} in either environment wins. Its stdout and
 * stderr come to this JVM's, each line prefixed with {@code [rankN]: } (rank = {@link #rankOffset}
 * + index). When a worker fails, the others are stopped and {@link SpawnContext#join()} throws a
 * {@link SpawnException} naming it. Workers never outlive this JVM: each watches a pipe from it
 * and halts when the pipe closes, so their code must not read stdin.
 *
 * <p>Java cannot change its own environment, so where a Python script sets
 * {@code os.environ['MASTER_ADDR']} before {@code mp.spawn}, pass {@link #env} here.
 */
public final class Spawn {
    /** Default time a stopped worker gets between SIGTERM and SIGKILL. */
    public static final Duration DEFAULT_STOP_GRACE = Duration.ofSeconds(3);

    /** Variables a launcher sets for its own workers; a spawned worker is not one of them. */
    private static final List<String> LAUNCHER_ONLY_ENV = List.of(Setting.AGENT_STORE.variable(),
            Setting.RESTART_COUNT.variable());

    private final SpawnEntryPoint entry;
    private int nprocs = 1;
    private int rankOffset;
    private List<String> args = List.of();
    private final Map<String, String> env = new LinkedHashMap<>();
    private Duration stopGrace = DEFAULT_STOP_GRACE;
    private PrintStream out = System.out;
    private PrintStream err = System.err;

    private Spawn(SpawnEntryPoint entry) {
        this.entry = entry;
    }

    /**
     * Runs {@code fn(index, args)} in {@code nprocs} new local JVMs and waits for them; mirrors
     * {@code torch.multiprocessing.spawn(fn, args, nprocs)}. {@code fn} must be a static method
     * reference such as {@code MyTrainer::train}; see {@link #env}, output prefixes and
     * {@code join=False} ({@link #start()}) for more.
     *
     * @throws SpawnException naming the first worker that failed (the others are stopped)
     * @throws IllegalArgumentException if fn is not a static method a new JVM can find
     */
    public static void spawn(SpawnFunction fn, int nprocs, String... args) {
        of(fn).nprocs(nprocs).args(args).run();
    }

    /** {@link #spawn(SpawnFunction, int, String...)} for {@code static void methodName(int index, String[] args)} of type. */
    public static void spawn(Class<?> type, String methodName, int nprocs, String... args) {
        of(type, methodName).nprocs(nprocs).args(args).run();
    }

    /**
     * Workers that call {@code fn.call(index, args)}: a static method reference such as
     * {@code MyTrainer::train} for {@code static void train(int index, String[] args)}.
     *
     * @throws IllegalArgumentException if fn refers to an instance method, captures values, is not
     *     a lambda or method reference, or its class is not on the class path
     */
    public static Spawn of(SpawnFunction fn) {
        return new Spawn(SpawnEntryPoint.of(fn));
    }

    /**
     * Workers that call {@code type.methodName(index, args)}, a {@code static void methodName(int
     * index, String[] args)} (any access level).
     *
     * @throws IllegalArgumentException if there is no such method, it is not static, or the class
     *     is not on the class path
     */
    public static Spawn of(Class<?> type, String methodName) {
        return new Spawn(SpawnEntryPoint.of(type, methodName));
    }

    /** How many workers, at least 1 (default 1); mirrors {@code nprocs}. */
    public Spawn nprocs(int nprocs) {
        if (nprocs < 1) {
            throw new IllegalArgumentException("nprocs must be at least 1, got " + nprocs);
        }
        this.nprocs = nprocs;
        return this;
    }

    /** The arguments every worker's function gets (default none); mirrors {@code args}. */
    public Spawn args(String... args) {
        this.args = List.of(args);
        return this;
    }

    /** The arguments every worker's function gets. */
    public Spawn args(List<String> args) {
        this.args = List.copyOf(args);
        return this;
    }

    /** Sets a variable in every worker's environment (over this JVM's value). */
    public Spawn env(String name, String value) {
        if (name == null || name.isEmpty() || name.contains("=") || value == null) {
            throw new IllegalArgumentException("env needs a name without '=' and a value, got " + name + "=" + value);
        }
        env.put(name, value);
        return this;
    }

    /**
     * The rank of worker 0 (default 0), for output prefixes and error messages only: worker i is
     * shown as rank {@code offset + i}. Use {@code nodeRank * nprocs} when every node spawns nprocs.
     */
    public Spawn rankOffset(int offset) {
        if (offset < 0) {
            throw new IllegalArgumentException("rankOffset must be at least 0, got " + offset);
        }
        this.rankOffset = offset;
        return this;
    }

    /** Time a worker gets between SIGTERM and SIGKILL when it is stopped (default 3 s). */
    public Spawn stopGrace(Duration grace) {
        if (grace == null || grace.isNegative()) {
            throw new IllegalArgumentException("stopGrace must be zero or positive, got " + grace);
        }
        this.stopGrace = grace;
        return this;
    }

    /** Where the workers' prefixed stdout and stderr lines go (default System.out and System.err). */
    public Spawn output(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
        return this;
    }

    /** A fresh folder in the temporary directory for the workers' error files; null when none can be made. */
    private static Path errorFolder() {
        try {
            Path dir = Files.createTempDirectory("ddp4j-spawn-");
            dir.toFile().deleteOnExit(); // once empty: the workers' files are deleted with them below
            return dir;
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * Starts the workers and returns at once; mirrors {@code mp.spawn(..., join=False)}.
     *
     * @throws DistributedException if a worker JVM cannot be started (those already started are stopped)
     * @throws IllegalStateException if ddp4j runs on the module path: workers start on this JVM's class path
     */
    public SpawnContext start() {
        WorkerJvm.classPathProblem("java -cp \"app.jar:libs/*\" your.Main").ifPresent(problem -> {
            throw new IllegalStateException(problem);
        });
        List<SpawnContext.Worker> workers = new ArrayList<>();
        Path errorFolder = errorFolder();
        for (int index = 0; index < nprocs; index++) {
            int rank = rankOffset + index;
            ProcessBuilder pb = new ProcessBuilder(SpawnCommand.argv(entry, index, rank, nprocs, args, System.getenv()));
            Map<String, String> childEnv = pb.environment();
            LAUNCHER_ONLY_ENV.forEach(childEnv::remove);
            childEnv.put("LOCAL_RANK", Integer.toString(index));
            childEnv.put("LOCAL_WORLD_SIZE", Integer.toString(nprocs));
            childEnv.putAll(env);
            DumpSignal.moveSuspendSignal(childEnv); // so that SIGUSR2 asks for a dump, not a JVM crash
            Path errorFile = errorFolder == null ? null : errorFolder.resolve("rank-" + rank + "-error.json");
            if (errorFile != null) {
                errorFile.toFile().deleteOnExit();
                childEnv.put(ErrorFile.ENV, errorFile.toString());
            }
            Process p;
            try {
                p = pb.start(); // stdin stays a pipe from us: the worker's lifeline
            } catch (IOException e) {
                new SpawnContext(workers, stopGrace).close();
                throw new DistributedException("cannot start spawned worker rank " + rank + " (" + pb.command().get(0)
                        + "): " + e.getMessage(), e);
            }
            String prefix = "[rank" + rank + "]: ";
            OutputPump errPump = new OutputPump(p.getErrorStream(), err, prefix, SpawnContext.STDERR_TAIL_LINES);
            Thread outThread = new OutputPump(p.getInputStream(), out, prefix, 0).start("ddp4j-spawn-rank" + rank + "-out");
            Thread errThread = errPump.start("ddp4j-spawn-rank" + rank + "-err");
            workers.add(new SpawnContext.Worker(index, rank, p, outThread, errThread, errPump, errorFile));
        }
        return new SpawnContext(workers, stopGrace);
    }

    /**
     * Starts the workers and waits until all have finished; mirrors {@code mp.spawn(..., join=True)}.
     *
     * @throws SpawnException naming the first worker that failed, its exit code or signal and its
     *     last stderr lines (the others were stopped)
     * @throws DistributedException if a worker cannot be started, or this thread is interrupted
     */
    public void run() {
        try (SpawnContext context = start()) {
            context.join();
        }
    }
}
