package org.ddp4j.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.HashPartitioner;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.multiprocessing.Processes;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import scala.Tuple2;

/**
 * SparkDistributor on a real Spark standalone cluster started once for the class: a Master and two
 * one-core Workers on 127.0.0.1 (each its own JVM, {@link LocalSparkCluster}) and this test JVM as
 * the driver, so each barrier task gets an executor of its own, as on a real cluster.
 */
@Timeout(value = 280, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SparkDistributorClusterTest {
    private static final String TRAINER = "org.ddp4j.examples.SparkConvNetTrain";
    private static final Pattern CHECK = Pattern.compile("check rank=(\\d+) world=(\\d+) rows=(\\d+) steps=(\\d+) loss=\\S+"
            + " param_crc=([0-9a-f]{8})");
    private static final Pattern WHERE = Pattern.compile("\\| rank \\d of 2: .*CUDA_VISIBLE_DEVICES=(\\S+)");
    /** How long a job whose worker was killed may take to fail: the keep-alive bound of the issue. */
    private static final Duration FAILURE_BOUND = Duration.ofSeconds(60);

    private static LocalSparkCluster cluster;
    private static SparkContext sc;

    @BeforeAll
    static void startCluster() throws Exception {
        assumeTrue(LocalSparkCluster.sparkAvailable(), "the Spark jars (org.apache.spark:spark-core_2.13, a provided"
                + " dependency) are not on the test class path; scripts/setup.sh fetches them");
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        // Spark's INFO lines through slf4j-simple would flood the test report; set before Spark makes its loggers.
        for (String logger : List.of("org.apache.spark", "org.sparkproject", "io.netty", "org.apache.hadoop")) {
            System.setProperty("org.slf4j.simpleLogger.log." + logger, "warn");
        }
        Path target = Files.createDirectories(Path.of("target").toAbsolutePath());
        LocalSparkCluster.deleteOld(target); // an earlier run's logs and work directories
        cluster = LocalSparkCluster.start(Files.createTempDirectory(target, "spark-cluster-"), 2);
        SparkConf conf = new SparkConf().setMaster(cluster.masterUrl()).setAppName("ddp4j SparkDistributorClusterTest")
                .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.ui.enabled", "false")
                // one task per executor, a slot for every barrier task, no dynamic allocation (SPARK-24954)
                .set("spark.executor.cores", "1").set("spark.task.cpus", "1").set("spark.cores.max", "2")
                .set("spark.dynamicAllocation.enabled", "false")
                .set("spark.executor.memory", "512m")
                .set("spark.executor.extraJavaOptions", "-XX:+UseSerialGC -Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
                .set("spark.jars", cluster.ddp4jJar().toString()) // as spark-submit --jars
                .set("spark.barrier.sync.timeout", "120s");
        sc = new SparkContext(conf);
        awaitExecutors(Duration.ofSeconds(150));
    }

    /** Waits until both executors are registered with the driver. */
    private static void awaitExecutors(Duration limit) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (sc.statusTracker().getExecutorInfos().length < 3) { // the driver and two executors
            if (System.nanoTime() - deadline > 0) {
                fail("the cluster's two executors were not registered within " + limit + "; logs in " + cluster.dir());
            }
            Thread.sleep(200);
        }
    }

    @AfterAll
    static void stopCluster() {
        if (sc != null) {
            sc.stop();
        }
        if (cluster != null) {
            List<ProcessHandle> all = cluster.allProcesses();
            cluster.close();
            assertTrue(Processes.awaitExit(all, Duration.ofSeconds(5)), "a process of the Spark cluster outlived it");
        }
    }

    /** Rank r's check line from its worker's last lines. */
    private static Matcher check(WorkerResult r) {
        for (String line : r.lastLines()) {
            Matcher m = CHECK.matcher(line);
            if (m.find()) {
                return m;
            }
        }
        throw new AssertionError("rank " + r.rank() + " printed no check line: " + r.lastLines());
    }

    @Test
    void twoTasksTrainTheConvNetAsTheLauncherDoes() throws Exception {
        String[] args = {"--limit", "400", "--batch-size", "50", "--seed", "3"};
        List<WorkerResult> results = new SparkDistributor(2).sparkContext(sc).run(TRAINER, args);
        assertEquals(2, results.size());

        List<String> command = new ArrayList<>(List.of("--nproc-per-node", "2", "--master-port",
                Integer.toString(LauncherProcess.freePort()), TRAINER));
        command.addAll(List.of(args));
        LauncherProcess.Result launched = LauncherProcess.run(command.toArray(String[]::new));
        assertEquals(0, launched.exitCode(), launched.text());
        Map<Integer, String> launcherLines = new TreeMap<>();
        for (String line : launched.lines()) {
            Matcher m = CHECK.matcher(line);
            if (m.find()) {
                launcherLines.put(Integer.parseInt(m.group(1)), m.group(0));
            }
        }
        assertEquals(2, launcherLines.size(), launched.text());

        for (WorkerResult r : results) {
            Matcher m = check(r);
            assertEquals(r.rank(), Integer.parseInt(m.group(1)));
            assertEquals("2", m.group(2));
            assertEquals("200", m.group(3), "400 images over 2 ranks");
            assertEquals("4", m.group(4));
            // the same sampling, initialisation and arithmetic: bitwise the launcher's line, loss and parameters
            assertEquals(launcherLines.get(r.rank()), m.group(0), "rank " + r.rank() + " differs from the launcher run");
        }
        assertEquals(check(results.get(0)).group(5), check(results.get(1)).group(5), "the ranks' parameters differ");
        // each worker's output reached its executor's log, prefixed with its rank
        for (WorkerResult r : results) {
            assertTrue(executorStdoutContains("[rank" + r.rank() + "]: " + check(r).group(0)),
                    "no executor log under " + cluster.dir() + " holds rank " + r.rank() + "'s prefixed check line");
        }
    }

    @Test
    void aKilledWorkerFailsTheStageNamingItsRankAndTheClusterRunsTheNextJob(@org.junit.jupiter.api.io.TempDir Path started)
            throws Exception {
        // long enough to be killed mid-training: 200 epochs of 4 steps
        CompletableFuture<List<WorkerResult>> job = CompletableFuture.supplyAsync(() -> new SparkDistributor(2)
                .sparkContext(sc).run(TRAINER, "--limit", "400", "--batch-size", "50", "--epochs", "200", "--started-dir",
                        started.toString()));
        List<ProcessHandle> workers = awaitStarted(started, job);
        ProcessHandle rank0 = workers.get(0);
        ProcessHandle rank1 = workers.get(1);
        assertTrue(rank1.destroyForcibly(), "could not SIGKILL rank 1's worker");

        Throwable failure;
        try {
            job.get(FAILURE_BOUND.toSeconds(), TimeUnit.SECONDS);
            throw new AssertionError("the job succeeded although rank 1's worker was killed");
        } catch (TimeoutException e) {
            throw new AssertionError("the job did not fail within " + FAILURE_BOUND + " of rank 1's worker being killed", e);
        } catch (ExecutionException e) {
            failure = e.getCause();
        }
        WorkerFailedException w = assertInstanceOf(WorkerFailedException.class, failure, String.valueOf(failure));
        assertEquals(1, w.rank(), w.getMessage());
        assertTrue(w.getMessage().contains("ddp4j rank 1 ") && w.getMessage().contains("was killed by signal 9"),
                w.getMessage());
        // the other rank's worker went with the stage: no orphan
        assertTrue(Processes.awaitExit(List.of(rank0, rank1), Duration.ofSeconds(15)), "rank 0's worker outlived the stage");

        // the cluster is intact: the next job runs to the end
        List<WorkerResult> next = new SparkDistributor(2).sparkContext(sc).run(TRAINER, "--limit", "100", "--batch-size", "50");
        assertEquals(check(next.get(0)).group(5), check(next.get(1)).group(5));
    }

    /**
     * A worker stopped with SIGSTOP takes part in nothing: its task fails naming it as stopped, at half
     * the collective timeout, before its healthy peer times out; no rank is told to use join().
     */
    @Test
    void aStoppedWorkerIsNamedAsStoppedNotItsHealthyPeer(@org.junit.jupiter.api.io.TempDir Path started) throws Exception {
        CompletableFuture<List<WorkerResult>> job = CompletableFuture.supplyAsync(() -> new SparkDistributor(2)
                .sparkContext(sc).env("DDP4J_TIMEOUT_SECONDS", "12").run(TRAINER, "--limit", "400", "--batch-size", "50",
                        "--epochs", "200", "--started-dir", started.toString()));
        List<ProcessHandle> workers = awaitStarted(started, job);
        org.ddp4j.testing.LauncherJobs.signal("STOP", workers.get(1).pid());
        Throwable failure;
        try {
            job.get(FAILURE_BOUND.toSeconds(), TimeUnit.SECONDS);
            throw new AssertionError("the job succeeded although rank 1's worker was stopped");
        } catch (ExecutionException e) {
            failure = e.getCause();
        } finally {
            workers.forEach(ProcessHandle::destroyForcibly);
        }
        WorkerFailedException w = assertInstanceOf(WorkerFailedException.class, failure, String.valueOf(failure));
        assertEquals(1, w.rank(), w.getMessage());
        assertTrue(w.getMessage().contains("ddp4j rank 1 ") && w.getMessage().contains(" was stopped (state T"),
                w.getMessage());
        assertTrue(!w.getMessage().contains("ddp.join()"), w.getMessage());
        assertTrue(Processes.awaitExit(workers, Duration.ofSeconds(15)), "a worker outlived the stage");
    }

    @Test
    void interruptingTheDriverCancelsTheJobAndStopsEveryWorker(@org.junit.jupiter.api.io.TempDir Path started)
            throws Exception {
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread driver = new Thread(() -> {
            try {
                new SparkDistributor(2).sparkContext(sc).run(TRAINER, "--limit", "400", "--batch-size", "50", "--epochs",
                        "200", "--started-dir", started.toString());
                outcome.complete(null);
            } catch (Throwable e) {
                outcome.complete(e);
            }
        }, "test-driver");
        driver.start();
        List<ProcessHandle> workers = awaitStarted(started, outcome);
        driver.interrupt();
        Throwable failure = outcome.get(FAILURE_BOUND.toSeconds(), TimeUnit.SECONDS);
        SparkDistributorException e = assertInstanceOf(SparkDistributorException.class, failure, String.valueOf(failure));
        assertTrue(e.getMessage().contains("interrupted") && e.getMessage().contains("cancelled"), e.getMessage());
        assertTrue(Processes.awaitExit(workers, Duration.ofSeconds(15)), "a worker outlived its cancelled job");
    }

    /** Waits until both ranks have trained a step (their --started-dir markers) and returns their worker processes. */
    private static List<ProcessHandle> awaitStarted(Path started, java.util.concurrent.Future<?> job) throws Exception {
        List<ProcessHandle> workers = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        for (int rank = 0; rank < 2; rank++) {
            Path marker = started.resolve("rank" + rank + ".started");
            while (!Files.exists(marker) || Files.size(marker) == 0) {
                if (job.isDone() || System.nanoTime() - deadline > 0) {
                    fail("rank " + rank + " did not start training within 120 s: " + outcome(job));
                }
                Thread.sleep(100);
            }
            workers.add(ProcessHandle.of(Long.parseLong(Files.readString(marker).trim())).orElseThrow());
        }
        return workers;
    }

    @Test
    void unequalPartitionsTrainToOneModelWithJoin() throws Exception {
        MnistDataset images = new MnistDataset(MnistDataset.DEFAULT_DIR, true, 110);
        List<Tuple2<Integer, LabeledExample>> keyed = new ArrayList<>();
        for (int i = 0; i < images.size(); i++) {
            float[] pixels = new float[images.exampleNumel()];
            images.copyFeatures(i, pixels, 0);
            // keys by partition under HashPartitioner(2): even keys to partition 0 (75 rows), odd to partition 1 (35)
            keyed.add(new Tuple2<>(i < 75 ? 2 * i : 2 * i + 1, new LabeledExample(pixels, images.label(i))));
        }
        // a shuffle, as a real job's partitioning by key (a union or coalesce in the stage is refused by Spark's barrier mode)
        JavaRDD<LabeledExample> rows = JavaSparkContext.fromSparkContext(sc).parallelizePairs(keyed, 3)
                .partitionBy(new HashPartitioner(2)).values();
        List<WorkerResult> results = new SparkDistributor(2).runOnPartitions(rows, new long[] {1, 28, 28}, TRAINER,
                "--partition", "--batch-size", "25", "--epochs", "2");
        Matcher r0 = check(results.get(0));
        Matcher r1 = check(results.get(1));
        assertEquals(List.of("75", "6"), List.of(r0.group(3), r0.group(4)), r0.group(0));
        assertEquals(List.of("35", "4"), List.of(r1.group(3), r1.group(4)), r1.group(0));
        assertEquals(r0.group(5), r1.group(5), "the ranks ended with different parameters");
    }

    /**
     * An executor JVM killed with -9 takes its worker with it (the worker's lifeline pipe closes) and
     * fails the stage; the Worker daemon then starts a new executor. After the other tests on the
     * shared application, since it waits for that replacement.
     */
    /** Starts spark-submit (client mode: the driver is that JVM) running SparkRun with {@code sparkRunArgs}. */
    private static Process submit(String... sparkRunArgs) throws IOException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cluster.sparkHome().resolve("jars") + "/*",
                "org.apache.spark.deploy.SparkSubmit", "--master", cluster.masterUrl(),
                "--conf", "spark.executor.cores=1", "--conf", "spark.task.cpus=1",
                "--conf", "spark.dynamicAllocation.enabled=false",
                "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false",
                "--conf", "spark.executor.memory=512m",
                // the job may come before the executors register: Spark then checks for the slots again, every 2 s here
                "--conf", "spark.scheduler.barrier.maxConcurrentTasksCheck.interval=2s",
                "--conf", "spark.executor.extraJavaOptions=-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                // a GPU per task, as a GPU cluster is set up (the Workers' GPUs are pretend ones)
                "--conf", "spark.executor.resource.gpu.amount=1", "--conf", "spark.task.resource.gpu.amount=1",
                "--class", "org.ddp4j.spark.SparkRun", cluster.ddp4jJar().toString()));
        command.addAll(List.of(sparkRunArgs));
        ProcessBuilder pb = new ProcessBuilder(LocalSparkCluster.underLifeline("submit", command)).redirectErrorStream(true);
        pb.environment().put("SPARK_HOME", cluster.sparkHome().toString());
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        pb.environment().put("SPARK_SCALA_VERSION", "2.13");
        return pb.start();
    }

    /**
     * The driver killed with -9 mid-training: each task sees its driver gone within seconds and
     * stops its worker (the executors may linger until Spark notices; the workers may not).
     */
    @Test
    @Order(Integer.MAX_VALUE)
    void killingTheDriverStopsEveryWorkerWithinSeconds(@org.junit.jupiter.api.io.TempDir Path started) throws Exception {
        sc.stop();
        Process submit = submit("-n", "2", TRAINER, "--limit", "400", "--batch-size", "50", "--epochs", "200",
                "--started-dir", started.toString());
        CompletableFuture.runAsync(() -> {
            try {
                submit.getInputStream().transferTo(java.io.OutputStream.nullOutputStream()); // its output must not block it
            } catch (IOException e) {
                // the driver is gone
            }
        });
        try {
            CompletableFuture<Void> running = new CompletableFuture<>();
            submit.onExit().thenRun(() -> running.complete(null));
            List<ProcessHandle> workers = awaitStarted(started, running);
            // The lifeline wrapper execs the driver's JVM: the submitted process is the driver.
            assertTrue(submit.toHandle().destroyForcibly(), "could not SIGKILL the driver");
            assertTrue(Processes.awaitExit(workers, Duration.ofSeconds(20)),
                    "a worker outlived its killed driver by 20 s");
        } finally {
            submit.descendants().forEach(ProcessHandle::destroyForcibly);
            submit.destroyForcibly();
        }
    }

    @Test
    @Order(Integer.MAX_VALUE - 2)
    void aKilledExecutorTakesItsWorkerWithIt(@org.junit.jupiter.api.io.TempDir Path started) throws Exception {
        CompletableFuture<List<WorkerResult>> job = CompletableFuture.supplyAsync(() -> new SparkDistributor(2)
                .sparkContext(sc).run(TRAINER, "--limit", "400", "--batch-size", "50", "--epochs", "200", "--started-dir",
                        started.toString()));
        List<ProcessHandle> workers = awaitStarted(started, job);
        ProcessHandle executor = workers.get(1).parent().orElseThrow();
        assertTrue(executor.info().commandLine().orElse("").contains("CoarseGrainedExecutorBackend"),
                "rank 1's worker's parent is not an executor: " + executor.info());
        assertTrue(executor.destroyForcibly(), "could not SIGKILL rank 1's executor");

        assertTrue(Processes.awaitExit(List.of(workers.get(1)), Duration.ofSeconds(15)),
                "rank 1's worker outlived its executor");
        try {
            job.get(FAILURE_BOUND.toSeconds(), TimeUnit.SECONDS);
            throw new AssertionError("the job succeeded although rank 1's executor was killed");
        } catch (ExecutionException e) {
            assertInstanceOf(SparkDistributorException.class, e.getCause(), String.valueOf(e.getCause()));
        }
        assertTrue(Processes.awaitExit(workers, Duration.ofSeconds(15)), "rank 0's worker outlived the stage");
        awaitExecutors(Duration.ofSeconds(120)); // the Worker daemon's replacement executor
    }

    /**
     * The spark-submit line of docs/launching.md, against this cluster: SparkRun as the application, ddp4j as its
     * jar. Last, because this JVM's application holds both cores until it stops.
     */
    @Test
    @Order(Integer.MAX_VALUE - 1)
    void sparkSubmitRunsSparkRun() throws Exception {
        sc.stop();
        Process submit = submit("-n", "2", TRAINER, "--limit", "100", "--batch-size", "50");
        CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(submit.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "<output lost: " + e + ">";
            }
        });
        try {
            assertTrue(submit.waitFor(150, TimeUnit.SECONDS), "spark-submit did not finish within 150 s");
        } finally {
            submit.descendants().forEach(ProcessHandle::destroyForcibly);
            submit.destroyForcibly();
        }
        String text = output.get(30, TimeUnit.SECONDS);
        assertEquals(0, submit.exitValue(), text);
        List<String> crcs = text.lines().map(CHECK::matcher).filter(Matcher::find).map(m -> m.group(1) + ":" + m.group(5))
                .sorted().toList();
        assertEquals(2, crcs.size(), text);
        assertEquals(crcs.get(0).substring(2), crcs.get(1).substring(2), text);
        assertTrue(text.contains("[rank0]: check rank=0") && text.contains("[rank1]: check rank=1"), text);
        // each rank sees the host's GPUs in local-rank order, so that cuda:LOCAL_RANK is its task's own
        List<String> visible = text.lines().map(WHERE::matcher).filter(Matcher::find).map(m -> m.group(1)).toList();
        assertEquals(2, visible.size(), text);
        assertEquals(visible.get(0), visible.get(1), text);
        assertEquals(List.of("4", "7"), Stream.of(visible.get(0).split(",")).sorted().toList(), text);
    }

    private static boolean executorStdoutContains(String text) throws IOException {
        try (Stream<Path> files = Files.walk(cluster.dir())) {
            for (Path p : (Iterable<Path>) files.filter(f -> f.getFileName().toString().equals("stdout"))::iterator) {
                if (Files.readString(p).contains(text)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static String outcome(java.util.concurrent.Future<?> job) {
        if (!job.isDone()) {
            return "the job still runs";
        }
        try {
            return "the job ended: " + job.get();
        } catch (InterruptedException | ExecutionException e) {
            return "the job failed: " + e.getCause();
        }
    }
}
