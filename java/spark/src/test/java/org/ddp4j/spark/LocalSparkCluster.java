package org.ddp4j.spark;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import org.ddp4j.multiprocessing.Processes;

/**
 * A real Spark standalone cluster on 127.0.0.1 for the tests: one Master and N Workers, each in a
 * JVM of its own started from the Spark jars on the test class path, each Worker with one core.
 * A Worker starts its executors as {@code java -cp $SPARK_HOME/jars/* ...}; SPARK_HOME here is a
 * folder made for the cluster whose {@code jars/} links every jar of the test class path. ddp4j
 * itself reaches the executors as an application jar ({@link #ddp4jJar()}, made from the
 * target/classes folders of ddp4j, ddp4j-spark and ddp4j-examples), as {@code spark-submit --jars}
 * would bring it.
 *
 * <p>{@link #close()} kills the Workers with their executors (and whatever those started) and the
 * Master; a shutdown hook does the same if the test JVM exits first, and each daemon's process
 * group is killed when the test JVM dies without running it ({@link #LIFELINE}).
 */
final class LocalSparkCluster implements AutoCloseable {
    /** The address of each Worker's pretend GPU (a discovery script reports it; nothing uses it as a GPU). */
    static final List<String> FAKE_GPUS = List.of("7", "4");

    /** How long the Master may take to listen. */
    static final Duration START_LIMIT = Duration.ofSeconds(90);

    private final Path dir;
    private final int masterPort;
    private final List<Process> processes = new ArrayList<>();
    private final Path ddp4jJar;
    private final Thread hook = new Thread(this::kill, "ddp4j-spark-cluster-teardown");

    private LocalSparkCluster(Path dir, int masterPort, Path ddp4jJar) {
        this.dir = dir;
        this.masterPort = masterPort;
        this.ddp4jJar = ddp4jJar;
    }

    /** Whether the Spark jars are on the test class path (the only reason to skip the Spark tests). */
    static boolean sparkAvailable() {
        try {
            Class.forName("org.apache.spark.deploy.master.Master", false, LocalSparkCluster.class.getClassLoader());
            Class.forName("org.apache.spark.deploy.worker.Worker", false, LocalSparkCluster.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** Starts a Master and {@code workers} one-core Workers under {@code dir}; returns once the Master listens. */
    static LocalSparkCluster start(Path dir, int workers) throws IOException, InterruptedException {
        Path home = dir.resolve("spark-home");
        Path jars = home.resolve("jars");
        Files.createDirectories(jars);
        Files.createDirectories(home.resolve("conf"));
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            if (entry.endsWith(".jar") && Files.isRegularFile(p) && !Files.exists(jars.resolve(p.getFileName()))) {
                Files.createSymbolicLink(jars.resolve(p.getFileName()), p.toAbsolutePath());
            }
        }
        Path ddp4j = dir.resolve("ddp4j-app.jar");
        jarOf(classFolders(), ddp4j);
        LocalSparkCluster cluster = new LocalSparkCluster(dir, freePort(), ddp4j);
        Runtime.getRuntime().addShutdownHook(cluster.hook);
        try {
            cluster.startDaemon(home, "master", List.of(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                    Integer.toString(cluster.masterPort), "--webui-port", Integer.toString(freePort()));
            cluster.awaitListening(cluster.masterPort);
            for (int i = 0; i < workers; i++) {
                Path work = Files.createDirectories(dir.resolve("worker" + i));
                // one pretend GPU per Worker, address FAKE_GPUS[i]: only an application that asks for GPUs gets it
                Path gpu = dir.resolve("gpu-worker" + i + ".sh");
                Files.writeString(gpu, "#!/bin/sh\necho '{\"name\": \"gpu\", \"addresses\": [\"" + FAKE_GPUS.get(i) + "\"]}'\n");
                gpu.toFile().setExecutable(true);
                cluster.startDaemon(home, "worker" + i, List.of("-Dspark.worker.resource.gpu.amount=1",
                        "-Dspark.worker.resource.gpu.discoveryScript=" + gpu), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--webui-port", Integer.toString(freePort()), "--cores", "1", "--memory", "1g", "--work-dir",
                        work.toString(), cluster.masterUrl());
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    /** Deletes the {@code spark-cluster-*} folders that earlier runs left in {@code parent} (this run's stays for reading). */
    static void deleteOld(Path parent) throws IOException {
        try (Stream<Path> old = Files.list(parent)) {
            for (Path dir : (Iterable<Path>) old.filter(p -> p.getFileName().toString().startsWith("spark-cluster-"))::iterator) {
                try (Stream<Path> files = Files.walk(dir)) {
                    for (Path f : (Iterable<Path>) files.sorted(java.util.Comparator.reverseOrder())::iterator) {
                        Files.deleteIfExists(f); // symbolic links go, not the jars they point to
                    }
                }
            }
        }
    }

    /** {@code spark://127.0.0.1:PORT}. */
    String masterUrl() {
        return "spark://127.0.0.1:" + masterPort;
    }

    /** The cluster's SPARK_HOME: {@code jars/} links the test class path's jars. */
    Path sparkHome() {
        return dir.resolve("spark-home");
    }

    /** The ddp4j classes as a jar, for {@code spark.jars}. */
    Path ddp4jJar() {
        return ddp4jJar;
    }

    /** The folder of the cluster's logs and work directories (each executor's stdout and stderr are under worker*). */
    Path dir() {
        return dir;
    }

    /** Every process of the cluster: the daemons, their executors, and the executors' children. */
    List<ProcessHandle> allProcesses() {
        List<ProcessHandle> all = new ArrayList<>();
        for (Process p : processes) {
            all.addAll(p.descendants().toList());
            all.add(p.toHandle());
        }
        return all;
    }

    /**
     * Runs a daemon's command in a process group of its own with a watcher that reads the daemon's
     * stdin, a pipe from this JVM that is never written: at end of file (this JVM is gone, however
     * it died, kill -9 included) it kills the whole group, which holds the daemon, the executors a
     * Worker starts and their ddp4j workers. Then {@code exec}s the command, which keeps the pid.
     */
    private static final String LIFELINE = String.join("\n",
            "exec 3<&0",
            "( while :; do",
            "    IFS= read -r -t 1 line <&3; rc=$?",
            "    if [ $rc -eq 0 ]; then continue; fi",
            "    kill -0 $$ 2>/dev/null || exit 0",
            "    if [ $rc -le 128 ]; then kill -KILL -- -$$; exit 0; fi",
            "  done ) >/dev/null 2>&1 &",
            "exec \"$@\" </dev/null 3<&-");

    /** {@code command} run through {@link #LIFELINE} in a session of its own (keep its stdin a pipe from this JVM). */
    static List<String> underLifeline(String name, List<String> command) {
        List<String> wrapped = new ArrayList<>(List.of("/usr/bin/setsid", "/bin/bash", "-c", LIFELINE, "spark-" + name));
        wrapped.addAll(command);
        return wrapped;
    }

    private void startDaemon(Path home, String name, List<String> jvmOptions, String mainClass, String... args)
            throws IOException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:+UseSerialGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"));
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", home.resolve("jars") + File.separator + "*", mainClass));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(underLifeline(name, command)).redirectErrorStream(true)
                .redirectOutput(dir.resolve(name + ".log").toFile());
        pb.environment().put("SPARK_HOME", home.toString());
        pb.environment().put("SPARK_CONF_DIR", home.resolve("conf").toString());
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        pb.environment().put("SPARK_SCALA_VERSION", "2.13");
        // the executors' (and so the ddp4j workers') threads: two ranks share this machine's cores
        pb.environment().put("OMP_NUM_THREADS", "1");
        processes.add(pb.start());
    }

    private void awaitListening(int port) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + START_LIMIT.toNanos();
        while (true) {
            for (Process p : processes) {
                if (!p.isAlive()) {
                    throw new IOException("a Spark daemon exited with code " + p.exitValue() + " at start; see the logs in " + dir);
                }
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
                return;
            } catch (IOException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException("the Spark Master did not listen on " + port + " within " + START_LIMIT + "; see "
                            + dir.resolve("master.log"), e);
                }
                Thread.sleep(200);
            }
        }
    }

    /** Kills every process of the cluster and waits (bounded) until they are gone. */
    private void kill() {
        List<ProcessHandle> all = allProcesses();
        all.forEach(ProcessHandle::destroyForcibly);
        Processes.awaitExit(all, Duration.ofSeconds(30));
    }

    @Override
    public void close() {
        kill();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is exiting: the hook runs anyway
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /**
     * The test class path's main-class folders ({@code target/classes} of ddp4j with its native library,
     * of ddp4j-spark, and of ddp4j-examples when it runs the tests): in the reactor, Maven hands them over
     * as folders, not jars.
     */
    private static List<Path> classFolders() {
        List<Path> folders = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            if (Files.isDirectory(p) && p.getFileName().toString().equals("classes")) {
                folders.add(p);
            }
        }
        return folders;
    }

    /** Writes every file under each of {@code folders} into {@code jar}, as one application jar. */
    private static void jarOf(List<Path> folders, Path jar) throws IOException {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        Set<String> written = new HashSet<>(Set.of("/", "META-INF/MANIFEST.MF", "module-info.class")); // "/": the folder itself
        try (OutputStream file = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(file, manifest)) {
            for (Path classes : folders) {
                try (Stream<Path> files = Files.walk(classes)) {
                    for (Path p : (Iterable<Path>) files.sorted()::iterator) {
                        String name = classes.relativize(p).toString().replace(File.separatorChar, '/');
                        String entry = Files.isDirectory(p) ? name + "/" : name;
                        if (!written.add(entry)) {
                            continue;
                        }
                        out.putNextEntry(new JarEntry(entry));
                        if (!Files.isDirectory(p)) {
                            Files.copy(p, out);
                        }
                        out.closeEntry();
                    }
                }
            }
        }
    }
}
