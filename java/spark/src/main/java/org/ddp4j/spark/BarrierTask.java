package org.ddp4j.spark;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;
import org.apache.spark.SparkEnv;
import org.apache.spark.SparkFiles;
import org.apache.spark.resource.ResourceInformation;
import org.ddp4j.distributed.ErrorFile;
import org.ddp4j.distributed.WorkerError;
import org.ddp4j.internal.Setting;
import org.ddp4j.launch.WorkerMain;
import org.ddp4j.multiprocessing.OutputPump;
import org.ddp4j.multiprocessing.Processes;
import org.ddp4j.multiprocessing.WorkerJvm;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * The body of one task of a {@link SparkDistributor} barrier stage, run on an executor: learns its
 * rank and the stage's hosts from the {@link BarrierTaskContext}, agrees with the other tasks on
 * the master port and a fresh store secret (task 0 picks both and {@code allGather} hands them
 * out, with every task's GPUs when Spark schedules them: {@link TaskGpus}), optionally writes its
 * partition to a local file, then starts its rank's worker JVM and watches it to the end.
 *
 * <p>The worker is {@code java -cp <executor class path + the task's jars> <worker flags>
 * org.ddp4j.launch.WorkerMain MAIN args}, with torchrun's environment. Its stdout and stderr go to
 * the executor's, each line prefixed with {@code [rankN]: }. Its stdin is a pipe from the executor
 * that nobody writes to: when the executor JVM dies, however it dies, the pipe closes and
 * WorkerMain halts the worker. When Spark kills the task (the stage failed elsewhere, the job was
 * cancelled), the next poll, within {@link #POLL_MILLIS}, destroys the worker's process tree.
 */
final class BarrierTask<T> extends AbstractFunction1<Iterator<T>, Iterator<WorkerResult>> implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(BarrierTask.class);

    /** How often the task checks whether Spark killed it. */
    static final long POLL_MILLIS = 100;

    /**
     * How long a task whose worker exited with an error (not a signal) waits before failing: a
     * peer killed by a signal (the usual cause of such an error) fails its task at once, so Spark
     * reports that one as the stage's failure and kills this task meanwhile.
     */
    static final Duration CONSEQUENCE_GRACE = Duration.ofSeconds(3);

    /** How long a destroyed worker gets to be gone. */
    static final Duration STOP_WAIT = Duration.ofSeconds(10);

    /** Lines of a failed worker's stderr quoted in the exception. */
    static final int ERROR_LINES = 20;

    private final JobSpec spec;

    BarrierTask(JobSpec spec) {
        this.spec = spec;
    }

    @Override
    public Iterator<WorkerResult> apply(Iterator<T> rows) {
        BarrierTaskContext ctx = BarrierTaskContext.get();
        try {
            WorkerResult result = runTask(ctx, rows);
            return CollectionConverters.asScala(List.of(result).iterator());
        } catch (InterruptedException e) {
            ctx.killTaskIfInterrupted(); // Spark's TaskKilledException, when Spark killed us
            Thread.currentThread().interrupt();
            throw new IllegalStateException("ddp4j rank " + ctx.partitionId() + ": the task was interrupted", e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private WorkerResult runTask(BarrierTaskContext ctx, Iterator<T> rows) throws IOException, InterruptedException {
        int rank = ctx.partitionId();
        List<String> addresses = new ArrayList<>();
        for (BarrierTaskInfo info : ctx.getTaskInfos()) {
            addresses.add(info.address());
        }
        TaskHosts hosts = new TaskHosts(addresses);
        Path partition = null;
        try {
            if (spec.exampleShape() != null) {
                partition = Files.createTempFile(partitionDir(), "ddp4j-partition-rank" + rank + "-", ".safetensors");
                @SuppressWarnings("unchecked")
                java.util.Iterator<LabeledExample> examples = (java.util.Iterator<LabeledExample>) (java.util.Iterator<?>)
                        CollectionConverters.asJava(rows);
                long n = PartitionFile.write(examples, spec.exampleShape(), partition);
                LOG.info("ddp4j rank {}: wrote its partition ({} rows) to {}", rank, n, partition);
            }
            // Task 0 picks the port on its own host (the master's) and the secret; every task learns both, and
            // every task's GPUs (when Spark schedules GPUs).
            String gpus = TaskGpus.encode(gpuAddresses(ctx));
            String mine = (rank == 0 ? freePort() + " " + newSecret() : "- -") + " " + gpus;
            String[] all = ctx.allGather(mine);
            String[] agreed = all[0].split(" ");
            if (agreed.length != 3) {
                // (the message is not quoted: it holds the secret)
                throw new IllegalStateException("ddp4j rank " + rank + ": task 0's rendezvous message has " + agreed.length
                        + " fields instead of 3 (port, secret, GPUs); are the tasks running the same ddp4j version?");
            }
            List<List<String>> gpusByRank = new ArrayList<>();
            for (String message : all) {
                String[] fields = message.split(" ");
                gpusByRank.add(TaskGpus.decode(fields[fields.length - 1]));
            }
            return supervise(ctx, rank, hosts, agreed[0], agreed[1], partition,
                    TaskGpus.visibleDevices(hosts, gpusByRank, rank));
        } finally {
            if (partition != null) {
                Files.deleteIfExists(partition);
            }
        }
    }

    /** Starts the rank's worker and waits for it, stopping it when the task is killed or times out. */
    private WorkerResult supervise(BarrierTaskContext ctx, int rank, TaskHosts hosts, String port, String secret,
            Path partition, String visibleDevices) throws InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command(hosts.localWorldSize(rank)));
        Map<String, String> env = pb.environment();
        // A launcher's own variables (if this executor was started under one) mean nothing to this worker.
        env.remove(Setting.AGENT_STORE.variable());
        env.remove(Setting.RESTART_COUNT.variable());
        env.remove(Setting.MAX_RESTARTS.variable());
        env.remove(Setting.STORE_SECRET_FILE.variable());
        env.putAll(spec.env());
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(hosts.worldSize()));
        env.put("LOCAL_RANK", Integer.toString(hosts.localRank(rank)));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(hosts.localWorldSize(rank)));
        env.put("GROUP_RANK", Integer.toString(hosts.groupRank(rank)));
        env.put("GROUP_WORLD_SIZE", Integer.toString(hosts.groupWorldSize()));
        env.put("MASTER_ADDR", hosts.host(0));
        env.put("MASTER_PORT", port);
        env.put(Setting.STORE_SECRET.variable(), secret);
        env.put(Setting.PROGRESS.variable(), "0"); // an executor's log is no terminal
        if (partition != null) {
            env.put(Setting.SPARK_PARTITION.variable(), partition.toString());
        }
        Duration stoppedLimit = stoppedLimit(env); // before the worker starts: a bad timeout leaves none behind
        Path errorFile = errorFileFor(rank);
        if (errorFile != null) {
            env.put(ErrorFile.ENV, errorFile.toString());
        }
        if (visibleDevices != null && !env.containsKey("CUDA_VISIBLE_DEVICES")) {
            env.put("CUDA_VISIBLE_DEVICES", visibleDevices); // cuda:LOCAL_RANK is the GPU Spark gave this task
        }
        String who = "ddp4j rank " + rank + " (host " + hosts.host(rank) + ", local rank " + hosts.localRank(rank);
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new WorkerFailedException(who + ") could not start: " + e.getMessage() + " (command: "
                    + String.join(" ", pb.command()) + ")", rank);
        }
        who += ", pid " + process.pid() + ")";
        LOG.info("{} started: {} on {} ranks, MASTER_ADDR={} MASTER_PORT={}", who, spec.mainClass(), hosts.worldSize(),
                hosts.host(0), port);
        String prefix = "[rank" + rank + "]: ";
        OutputPump out = new OutputPump(process.getInputStream(), System.out, prefix, spec.outputLines());
        OutputPump err = new OutputPump(process.getErrorStream(), System.err, prefix, ERROR_LINES);
        Thread outThread = out.start("ddp4j-rank" + rank + "-stdout");
        Thread errThread = err.start("ddp4j-rank" + rank + "-stderr");
        OutputStream lifeline = process.getOutputStream(); // held open, never written: the worker's tie to this JVM
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(spec.timeoutMillis());
        long stoppedSince = 0;
        DriverWatch driver = DriverWatch.ofThisExecutor();
        try {
            while (!process.waitFor(POLL_MILLIS, TimeUnit.MILLISECONDS)) {
                if (driver != null && driver.gone()) {
                    stop(process);
                    throw new WorkerFailedException(who + " stopped: its driver (" + driver.driver() + ") is gone (it"
                            + " accepted no connection for " + DriverWatch.MISSES * DriverWatch.INTERVAL.toSeconds()
                            + " s: killed, or its host is down), so the job is over", rank);
                }
                char state = Processes.state(process.pid());
                if (!Processes.isStopped(state)) {
                    stoppedSince = 0;
                } else if (stoppedSince == 0) {
                    stoppedSince = System.nanoTime();
                    LOG.warn("{} is stopped (state {}: SIGSTOP, Ctrl-Z or a debugger); the other ranks wait for it", who,
                            state);
                } else if (System.nanoTime() - stoppedSince > stoppedLimit.toNanos()) {
                    // Its peers time out at the collective timeout: fail first, naming the rank that stands still.
                    stop(process);
                    throw new WorkerFailedException(who + " was stopped (state " + state + ": SIGSTOP, Ctrl-Z or a"
                            + " debugger) for " + stoppedLimit.toSeconds() + " s and took part in no collective; the other"
                            + " ranks' collectives wait for it until their timeout (" + Setting.TIMEOUT_SECONDS.variable()
                            + "), and their failures are its consequences", rank);
                }
                if (ctx.isInterrupted()) {
                    stop(process);
                    LOG.warn("{} stopped: Spark killed its task ({})", who, ctx.getKillReason().getOrElse(() -> "no reason"));
                    ctx.killTaskIfInterrupted();
                    throw new InterruptedException("Spark killed the task");
                }
                if (System.nanoTime() - deadline > 0) {
                    stop(process);
                    throw new WorkerFailedException(who + " did not finish within the job's timeout of "
                            + Duration.ofMillis(spec.timeoutMillis()) + " and was stopped (SparkDistributor.timeout)"
                            + lastLines(err), rank);
                }
            }
            outThread.join(STOP_WAIT.toMillis());
            errThread.join(STOP_WAIT.toMillis());
            int code = process.exitValue();
            if (code == 0) {
                LOG.info("{} finished", who);
                return new WorkerResult(rank, hosts.host(rank), out.tail());
            }
            boolean signal = code > 128 && code <= 128 + 64;
            String how = signal ? " was killed by signal " + (code - 128) + signalName(code - 128) : " exited with code " + code;
            if (!signal) {
                awaitKill(ctx, CONSEQUENCE_GRACE);
            }
            WorkerError recorded = errorFile == null ? null : ErrorFile.read(errorFile);
            throw new WorkerFailedException(who + how + (recorded == null ? "" : ": " + recorded.summary())
                    + lastLines(err), rank);
        } finally {
            if (driver != null) {
                driver.close();
            }
            if (errorFile != null) {
                try {
                    Files.deleteIfExists(errorFile);
                } catch (IOException ignored) {
                    // a file left in the temporary directory is harmless
                }
            }
            if (Processes.isRunning(process.toHandle())) {
                stop(process); // an exception, or Spark's kill: never leave the worker behind
            }
            try {
                lifeline.close();
            } catch (IOException ignored) {
                // the worker is gone
            }
        }
    }

    /**
     * How long a stopped worker may stay stopped before its task fails naming it: half the
     * collective timeout its peers use, so that this failure reaches the driver before theirs.
     */
    static Duration stoppedLimit(Map<String, String> env) {
        return Setting.TIMEOUT_SECONDS.seconds(env, Duration.ofMinutes(30)).dividedBy(2);
    }

    /** A fresh path for rank {@code rank}'s error file ({@link ErrorFile}), or null when none can be made. */
    private static Path errorFileFor(int rank) {
        try {
            Path file = Files.createTempFile("ddp4j-rank" + rank + "-", "-error.json");
            Files.delete(file); // the worker creates it only when it fails
            return file;
        } catch (IOException e) {
            return null;
        }
    }

    /** The worker's command line for a host with {@code localWorkers} ranks. */
    private List<String> command(int localWorkers) {
        List<String> argv = new ArrayList<>();
        argv.add(WorkerJvm.javaExecutable());
        argv.add("-cp");
        argv.add(workerClassPath());
        argv.add(WorkerJvm.LEFTOVER_AGE_FLAG);
        argv.add("-D" + WorkerMain.PARENT_PROPERTY + "=Spark task");
        List<String> options = new ArrayList<>(WorkerJvm.splitOptions(
                spec.env().getOrDefault(WorkerJvm.JAVA_OPTS_ENV, System.getenv().getOrDefault(WorkerJvm.JAVA_OPTS_ENV, ""))));
        options.addAll(spec.javaOptions());
        argv.addAll(WorkerJvm.defaults(options, localWorkers));
        argv.addAll(options);
        argv.add(WorkerMain.class.getName());
        argv.add(spec.mainClass());
        argv.addAll(spec.args());
        return argv;
    }

    /**
     * The executor's class path ({@code java.class.path}: Spark's jars and
     * {@code spark.executor.extraClassPath}) and the files of the task's class loaders, where
     * Spark puts the application jar and {@code --jars}; those come first with
     * {@code spark.executor.userClassPathFirst}, as they do for the executor's classes.
     */
    static String workerClassPath() {
        Set<String> own = new LinkedHashSet<>(List.of(System.getProperty("java.class.path", "").split(File.pathSeparator)));
        own.remove("");
        Set<String> task = new LinkedHashSet<>();
        for (ClassLoader l = Thread.currentThread().getContextClassLoader(); l != null; l = l.getParent()) {
            if (l instanceof URLClassLoader u) {
                for (URL url : u.getURLs()) {
                    if ("file".equals(url.getProtocol())) {
                        try {
                            task.add(Path.of(url.toURI()).toString());
                        } catch (URISyntaxException | IllegalArgumentException e) {
                            task.add(url.getPath());
                        }
                    }
                }
            }
        }
        task.removeAll(own);
        SparkEnv sparkEnv = SparkEnv.get();
        boolean userFirst = sparkEnv != null && sparkEnv.conf().getBoolean("spark.executor.userClassPathFirst", false);
        List<String> entries = new ArrayList<>(userFirst ? task : own);
        entries.addAll(userFirst ? own : task);
        return String.join(File.pathSeparator, entries);
    }

    /** Destroys the worker and whatever it started, and waits (bounded) until they are gone. */
    static void stop(Process process) {
        List<ProcessHandle> tree = new ArrayList<>(process.descendants().toList());
        tree.add(process.toHandle());
        tree.forEach(ProcessHandle::destroyForcibly);
        boolean interrupted = Thread.interrupted(); // Spark's kill interrupts this thread: still wait for the tree
        try {
            if (!Processes.awaitExit(tree, STOP_WAIT)) {
                LOG.error("ddp4j worker pid {} (or a child of it) is still running {} after SIGKILL", process.pid(), STOP_WAIT);
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Waits up to {@code grace}, returning early (through Spark's TaskKilledException) when Spark kills the task. */
    private static void awaitKill(BarrierTaskContext ctx, Duration grace) throws InterruptedException {
        long end = System.nanoTime() + grace.toNanos();
        while (System.nanoTime() - end < 0) {
            ctx.killTaskIfInterrupted();
            Thread.sleep(POLL_MILLIS);
        }
        ctx.killTaskIfInterrupted();
    }

    private static String lastLines(OutputPump err) {
        List<String> tail = err.tail();
        if (tail.isEmpty()) {
            return "; it printed nothing on stderr";
        }
        return "; its last lines on stderr:\n" + String.join("\n", tail);
    }

    private static String signalName(int signal) {
        return switch (signal) {
            case 9 -> " (SIGKILL: kill -9, or the kernel's out-of-memory killer)";
            case 15 -> " (SIGTERM)";
            case 11 -> " (SIGSEGV: a crash in native code)";
            case 6 -> " (SIGABRT: a native abort)";
            case 2 -> " (SIGINT)";
            default -> "";
        };
    }

    /** The addresses of the GPUs Spark gave this task (none unless spark.task.resource.gpu.amount is set). */
    private static List<String> gpuAddresses(BarrierTaskContext ctx) {
        ResourceInformation gpu = ctx.resourcesJMap().get("gpu");
        return gpu == null ? List.of() : List.of(gpu.addresses());
    }

    /** Where the partition file goes: the executor's Spark local directory, else java.io.tmpdir. */
    private static Path partitionDir() {
        try {
            Path dir = Path.of(SparkFiles.getRootDirectory());
            if (Files.isDirectory(dir) && Files.isWritable(dir)) {
                return dir;
            }
        } catch (RuntimeException e) {
            // no SparkEnv (a unit test): the temp dir
        }
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static String newSecret() {
        byte[] bytes = new byte[32];
        new SecureRandom().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
