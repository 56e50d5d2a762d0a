package org.ddp4j.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.IntStream;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.ddp4j.internal.Setting;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Runs a ddp4j training main on a Spark cluster, one rank per task of a barrier stage; mirrors
 * PySpark's {@code pyspark.ml.torch.distributor.TorchDistributor}:
 *
 * <pre>{@code
 * List<WorkerResult> ranks = new SparkDistributor(2).run("org.ddp4j.examples.ConvNetDemo", "--epochs", "1");
 * }</pre>
 *
 * <p>{@link #run} starts a stage of {@code numProcesses} tasks with
 * {@code sc.parallelize(0..n-1, n).barrier().mapPartitions(...)}. Each task takes its rank from
 * its partition id and the master address from task 0's host ({@code BarrierTaskContext.getTaskInfos()});
 * task 0 picks a free port and a fresh random store secret and {@code allGather} hands both to
 * all; LOCAL_RANK and LOCAL_WORLD_SIZE count the tasks on the same host. Each task then starts
 * one worker JVM, {@code org.ddp4j.launch.WorkerMain MAIN args...}, with the executor's class
 * path plus the task's jars ({@code --jars}, the application jar), the launcher's worker JVM
 * defaults and {@code DDP4J_JAVA_OPTS}, and the torch environment: RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
 * {@code DDP4J_STORE_SECRET}, so {@code Distributed.initProcessGroup("gloo")} works in it as
 * under the launcher. Its output goes to the executor's stdout and stderr (the task's log in
 * Spark's UI), each line prefixed with {@code [rankN]: }. Where Spark schedules GPUs, one per task
 * ({@code spark.executor.resource.gpu.amount=1}, {@code spark.task.resource.gpu.amount=1}), each
 * worker gets {@code CUDA_VISIBLE_DEVICES} listing its host's tasks' GPUs in local-rank order,
 * so that {@code Cuda.localDevice(System.getenv())} (cuda:LOCAL_RANK) is the GPU Spark gave its
 * task (PySpark's {@code use_gpu}); a {@code CUDA_VISIBLE_DEVICES} in {@link #env} or the
 * executor's environment is kept.
 *
 * <p>A worker that fails fails its task with a {@link WorkerFailedException} naming the rank and
 * quoting its last stderr lines; Spark then fails the barrier stage as a whole and kills the other
 * tasks, whose workers are destroyed; {@link #run} throws the same exception on the driver. A
 * job that is cancelled, runs past {@link #timeout}, or whose calling thread is interrupted is
 * cancelled through its job group (with {@code interruptOnCancel}), which destroys every worker;
 * a worker also halts by itself when its executor JVM dies. The store secret travels in Spark's
 * task results: enable {@code spark.authenticate} and {@code spark.network.crypto.enabled} where
 * the cluster's network is not trusted.
 *
 * <p>The cluster must run every task at once (SPARK-24954): at least {@code numProcesses} task
 * slots (executor cores / {@code spark.task.cpus}) and no dynamic allocation. Spark waits for
 * the slots a while (up to {@code spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures}
 * checks {@code spark.scheduler.barrier.maxConcurrentTasksCheck.interval} apart) before it fails
 * the job. The tasks' rendezvous waits at most {@code spark.barrier.sync.timeout}.
 *
 * <p>Not thread-safe while being configured; {@link #run} may be called again for the next job.
 */
public final class SparkDistributor {
    /** The default of {@link #timeout}: a day. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofHours(24);

    /** The default of {@link #outputLines}. */
    public static final int DEFAULT_OUTPUT_LINES = 20;

    /** How long a cancelled job gets to end before {@link #run} gives up waiting for it. */
    static final Duration CANCEL_WAIT = Duration.ofSeconds(60);

    /** Variables every task sets itself for its worker; {@link #env} refuses them. */
    private static final Set<String> TASK_VARIABLES = Set.of("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
            "GROUP_RANK", "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", Setting.STORE_SECRET.variable(),
            Setting.STORE_SECRET_FILE.variable(), Setting.SPARK_PARTITION.variable());

    private static final ClassTag<WorkerResult> RESULT = ClassTag$.MODULE$.apply(WorkerResult.class);

    private final int numProcesses;
    private SparkContext sparkContext;
    private final Map<String, String> env = new LinkedHashMap<>();
    private final List<String> javaOptions = new ArrayList<>();
    private Duration timeout = DEFAULT_TIMEOUT;
    private int outputLines = DEFAULT_OUTPUT_LINES;

    /**
     * A distributor of {@code numProcesses} ranks, one per Spark task (TorchDistributor's
     * {@code num_processes}); it uses the active SparkContext unless {@link #sparkContext} gives one.
     *
     * @throws IllegalArgumentException if {@code numProcesses} is below 1
     */
    public SparkDistributor(int numProcesses) {
        if (numProcesses < 1) {
            throw new IllegalArgumentException("numProcesses must be at least 1 (one rank per Spark task), got " + numProcesses);
        }
        this.numProcesses = numProcesses;
    }

    /** The number of ranks (and Spark tasks). */
    public int numProcesses() {
        return numProcesses;
    }

    /** Runs {@link #run}'s jobs on {@code sc} instead of {@code SparkContext.getOrCreate()} (runOnPartitions uses its RDD's). */
    public SparkDistributor sparkContext(SparkContext sc) {
        this.sparkContext = Objects.requireNonNull(sc, "sc");
        return this;
    }

    /**
     * Adds {@code name=value} to every worker's environment, after the executor's own (e.g.
     * {@code OMP_NUM_THREADS}, {@code DDP4J_TIMEOUT_SECONDS}, {@code DDP4J_JAVA_OPTS}).
     *
     * @throws IllegalArgumentException for a variable each task sets itself (RANK, MASTER_PORT, the store secret, ...)
     */
    public SparkDistributor env(String name, String value) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(value, "value");
        if (TASK_VARIABLES.contains(name)) {
            throw new IllegalArgumentException(name + " is set by each Spark task for its worker (" + TASK_VARIABLES
                    + "); it cannot be given here");
        }
        env.put(name, value);
        return this;
    }

    /** Adds JVM options for every worker (e.g. {@code -Xmx4g}), after those of {@code DDP4J_JAVA_OPTS}. */
    public SparkDistributor javaOptions(String... options) {
        for (String o : options) {
            javaOptions.add(Objects.requireNonNull(o, "option"));
        }
        return this;
    }

    /**
     * The longest a job may run (default {@link #DEFAULT_TIMEOUT}): after it, each task stops its
     * worker and the driver cancels the job; {@link #run} then throws.
     *
     * @throws IllegalArgumentException if not positive
     */
    public SparkDistributor timeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("the timeout must be positive, got " + timeout);
        }
        this.timeout = timeout;
        return this;
    }

    /**
     * How many of each worker's last stdout lines {@link WorkerResult#lastLines()} returns
     * (default {@value #DEFAULT_OUTPUT_LINES}; 0 for none). Every line also goes to the executor's log.
     *
     * @throws IllegalArgumentException if negative
     */
    public SparkDistributor outputLines(int lines) {
        if (lines < 0) {
            throw new IllegalArgumentException("outputLines must not be negative, got " + lines);
        }
        this.outputLines = lines;
        return this;
    }

    /**
     * Runs {@code mainClass}'s {@code main(args)} on {@link #numProcesses()} ranks, one worker JVM per
     * task of a Spark barrier stage, and waits for all of them; mirrors {@code TorchDistributor.run}.
     * Each rank reads its data as under the launcher (e.g. a {@code DistributedSampler} over a
     * dataset every host can read).
     *
     * @param mainClass a class with {@code public static void main(String[])} on the executors' class
     *     path (the application jar, {@code --jars}, or {@code spark.executor.extraClassPath})
     * @return each rank's result, ordered by rank
     * @throws WorkerFailedException if a worker failed, naming its rank and quoting its stderr
     * @throws SparkDistributorException if Spark could not run the stage (too few slots, dynamic
     *     allocation), or the job was cancelled, timed out or interrupted (the interrupt flag is set again)
     */
    public List<WorkerResult> run(String mainClass, String... args) {
        SparkContext sc = context();
        RDD<Integer> ranks = JavaSparkContext.fromSparkContext(sc)
                .parallelize(IntStream.range(0, numProcesses).boxed().toList(), numProcesses).rdd();
        return execute(sc, ranks, spec(mainClass, args, null), mainClass);
    }

    /**
     * Runs {@code mainClass} on the partitions of {@code rows}, one rank per partition: each task
     * writes its partition to a local safetensors file (features float32 [N, ...exampleShape],
     * labels int64 [N]) and starts its worker with the file's path in {@code DDP4J_SPARK_PARTITION};
     * the trainer opens it with {@link PartitionDataset#open()} instead of sampling a shared dataset.
     * Partitions may hold different numbers of rows: train inside {@code ddp.join()}. The file is
     * deleted when the worker has ended.
     *
     * @param rows the training rows, in exactly {@link #numProcesses()} partitions (use
     *     {@code rows.repartition(n)} or {@code coalesce(n)} first)
     * @param exampleShape the shape of one example's features, e.g. {@code {1, 28, 28}}; each row holds its product
     * @return each rank's result, ordered by rank
     * @throws IllegalArgumentException if {@code rows} has another number of partitions, or the shape is empty or not positive
     * @throws WorkerFailedException as {@link #run}
     * @throws SparkDistributorException as {@link #run}; also when a row has another length than
     *     the shape's product (the message names the row)
     */
    public List<WorkerResult> runOnPartitions(JavaRDD<LabeledExample> rows, long[] exampleShape, String mainClass,
            String... args) {
        Objects.requireNonNull(rows, "rows");
        if (exampleShape == null || exampleShape.length == 0 || Arrays.stream(exampleShape).anyMatch(s -> s < 1)) {
            throw new IllegalArgumentException("exampleShape must be the positive shape of one example's features, e.g."
                    + " {1, 28, 28}, got " + Arrays.toString(exampleShape));
        }
        int partitions = rows.getNumPartitions();
        if (partitions != numProcesses) {
            throw new IllegalArgumentException("the RDD has " + partitions + " partitions but the distributor runs "
                    + numProcesses + " ranks, one per partition: pass rows.repartition(" + numProcesses + ") (or coalesce("
                    + numProcesses + "))");
        }
        return execute(rows.context(), rows.rdd(), spec(mainClass, args, exampleShape), mainClass);
    }

    private JobSpec spec(String mainClass, String[] args, long[] exampleShape) {
        Objects.requireNonNull(mainClass, "mainClass");
        if (mainClass.isBlank()) {
            throw new IllegalArgumentException("mainClass is empty: give the trainer's main class, e.g. org.ddp4j.examples.ConvNetDemo");
        }
        return new JobSpec(mainClass, List.of(args), env, javaOptions, timeout.toMillis(), outputLines, exampleShape);
    }

    private SparkContext context() {
        return sparkContext != null ? sparkContext : SparkContext.getOrCreate();
    }

    /** Submits the barrier stage from a thread of its own (its job group), waits, and cancels it on a timeout or an interrupt. */
    private <T> List<WorkerResult> execute(SparkContext sc, RDD<T> rdd, JobSpec spec, String mainClass) {
        RDD<WorkerResult> stage = rdd.barrier().mapPartitions(new BarrierTask<T>(spec), false, RESULT);
        String group = "ddp4j-" + UUID.randomUUID();
        CompletableFuture<Object> done = new CompletableFuture<>();
        Thread submitter = new Thread(() -> {
            // interruptOnCancel: a cancelled or failed stage interrupts every task, which destroys its worker at once
            sc.setJobGroup(group, "ddp4j " + mainClass + " on " + numProcesses + " ranks", true);
            try {
                done.complete(stage.collect());
            } catch (Throwable e) {
                done.completeExceptionally(e);
            } finally {
                sc.clearJobGroup();
            }
        }, "ddp4j-spark-job");
        submitter.setDaemon(true);
        submitter.start();
        Object results;
        try {
            // the tasks stop their workers at the timeout; the driver's bound is a little later
            results = done.get(timeout.plus(CANCEL_WAIT).toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            cancel(sc, group, done);
            throw new SparkDistributorException("the ddp4j job (" + mainClass + " on " + numProcesses + " ranks) did not"
                    + " finish within " + timeout + " (SparkDistributor.timeout); it was cancelled");
        } catch (InterruptedException e) {
            cancel(sc, group, done);
            Thread.currentThread().interrupt();
            throw new SparkDistributorException("interrupted while waiting for the ddp4j job (" + mainClass + "); it was"
                    + " cancelled");
        } catch (ExecutionException e) {
            throw SparkFailures.translate(e.getCause(), numProcesses);
        }
        List<WorkerResult> list = new ArrayList<>();
        for (Object r : (Object[]) results) {
            list.add((WorkerResult) r);
        }
        list.sort(Comparator.comparingInt(WorkerResult::rank));
        return List.copyOf(list);
    }

    /** Cancels the job group and waits, at most {@link #CANCEL_WAIT}, for the job to end. */
    private static void cancel(SparkContext sc, String group, CompletableFuture<Object> done) {
        sc.cancelJobGroup(group);
        try {
            done.get(CANCEL_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // cancelled (the expected end), or still ending: nothing more to wait for
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
