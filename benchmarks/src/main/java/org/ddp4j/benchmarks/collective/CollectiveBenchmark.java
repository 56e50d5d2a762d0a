package org.ddp4j.benchmarks.collective;

import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The JMH harness for one collective on every rank of a job: subclass it, allocate the tensors in
 * {@link #prepare} and run one blocking collective in {@link #run}, then hand the class to
 * {@link CollectiveBench} under the launcher ({@code scripts/ddp4j-run --nproc-per-node N java -cp
 * benchmarks/target/benchmarks.jar org.ddp4j.benchmarks.collective.CollectiveBench --benchmark
 * your.Class}).
 *
 * <p>Why this shape: a collective returns only when every rank has called it, so every rank must
 * make exactly the same number of calls. JMH's timed modes (throughput, average time) stop each
 * rank's loop on its own clock and would leave one rank waiting forever at the end of an
 * iteration. Here each iteration is {@link Mode#SingleShotTime} over a fixed batch of calls (the
 * runner sets the same batch size on every rank), and a barrier before each iteration lines the
 * ranks up so that no rank's clock includes waiting for a late peer's previous iteration. JMH's
 * score is microseconds per iteration (the whole batch); {@link CollectiveBench} divides by the
 * batch size.
 *
 * <p>The group: {@link Setup Level.Trial} joins the default group with {@link #backend} through
 * {@code env://} (the launcher's variables; in a JMH fork too, which inherits them and gets its
 * own key space in the launcher's store) unless this JVM already has one, and leaves it again at
 * the end of the trial. The transport follows the environment the user set (e.g.
 * {@code DDP4J_SHM}); nothing here overrides it.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public abstract class CollectiveBenchmark {
    /** The process-group backend: {@code gloo} (CPU tensors) or {@code nccl} (tensors on cuda:LOCAL_RANK). */
    @Param("gloo")
    public String backend;

    /** The message size in bytes that {@link #prepare} allocates (float32, so {@code bytes / 4} elements, at least 1). */
    @Param("8")
    public long bytes;

    private ProcessGroup group;
    private boolean ownsGroup;

    /** Joins (or reuses) the default group and lets the subclass allocate its tensors. */
    @Setup(Level.Trial)
    public final void joinGroup() {
        ownsGroup = !Distributed.isInitialized();
        group = ownsGroup ? Distributed.initProcessGroup(backend) : Distributed.defaultGroup();
        prepare(group, bytes);
    }

    /** Lines the ranks up before each iteration (warm-up and measured). */
    @Setup(Level.Iteration)
    public final void lineUp() {
        group.barrier().awaitBlocking();
    }

    /** One call of the collective: the timed unit. */
    @Benchmark
    public final void collective() {
        run(group);
    }

    /** Frees the tensors and leaves the group if the trial joined it. */
    @TearDown(Level.Trial)
    public final void leaveGroup() {
        try {
            release();
        } finally {
            if (ownsGroup) {
                Distributed.destroyProcessGroup();
            }
        }
    }

    /**
     * Allocates what {@link #run} needs, on {@code group.device()}.
     *
     * @param bytes the message size in bytes (float32 elements: {@link #elements(long)})
     */
    protected abstract void prepare(ProcessGroup group, long bytes);

    /** Runs one collective and returns when its result is there (e.g. {@code work.awaitBlocking()}). */
    protected abstract void run(ProcessGroup group);

    /** Frees what {@link #prepare} allocated. */
    protected abstract void release();

    /** The reduction in nccl-tests' column "redop" ({@code sum}, ...), or {@code none}. */
    public String redop() {
        return "none";
    }

    /**
     * busbw / algbw at {@code ranks} ranks, nccl-tests' factor for this collective: what each link
     * carries relative to the message, so busbw is comparable across world sizes. 1 by default.
     */
    public double busBandwidthFactor(int ranks) {
        return 1;
    }

    /** The size nccl-tests reports for a message of {@code bytes} per rank (all-gather: the whole output). */
    public long reportedBytes(long bytes, int ranks) {
        return bytes;
    }

    /** The fewest ranks this benchmark can run on: 1 here; point-to-point needs 2. */
    public int minimumRanks() {
        return 1;
    }

    /** The error for a job of {@code ranks} ranks, fewer than {@link #minimumRanks()}: what is wrong and how to launch it. */
    public String tooFewRanks(int ranks) {
        return getClass().getSimpleName() + " needs at least " + minimumRanks() + " ranks, but this job has " + ranks
                + " (WORLD_SIZE): launch it with scripts/ddp4j-run --nproc-per-node " + minimumRanks() + " or more";
    }

    /** Whether the message size matters; a barrier runs once, at 0 bytes. */
    public boolean sized() {
        return true;
    }

    /** {@code cpu} moved to {@code device}: itself on the CPU, else a copy there (and {@code cpu} is closed). */
    protected static Tensor onDevice(Tensor cpu, Device device) {
        if (cpu.device().equals(device)) {
            return cpu;
        }
        try (cpu) {
            return cpu.to(device);
        }
    }

    /** float32 elements in a message of {@code bytes}: {@code bytes / 4}, at least 1. */
    public static long elements(long bytes) {
        return Math.max(1, bytes / Float.BYTES);
    }
}
