package org.ddp4j.cluster;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension that gives a test class its own cluster of {@code hosts} network namespaces
 * (scripts/cluster.sh: host I is {@code d4c-RUN-hI} with address 10.77.0.I on a private bridge)
 * and starts processes in them.
 *
 * <pre>
 * &#64;RegisterExtension static final NetnsCluster CLUSTER = new NetnsCluster(2);
 * </pre>
 *
 * <p>Before the class: skips it (a JUnit assumption, with the reason) when the JVM is not root or
 * the machine cannot build namespaces, else brings the cluster up. After each test: kills every
 * process it started and every process still inside a host, and clears the hosts' faults
 * (loss, drop, cap, link down). After the class: tears the cluster down, even when a test failed
 * or timed out. A JVM shutdown hook tears it down when the JVM is stopped midway (SIGTERM,
 * SIGINT). When the JVM is killed with SIGKILL, a watchdog ({@code cluster.sh watch}, in a session
 * of its own) tears the run down within a few seconds, and as a last resort the next
 * {@code cluster.sh up}, {@code down} or {@code reap} of any run does, since the run records this
 * JVM as its owner.
 *
 * <p>Each process's output (stdout and stderr merged) goes to a file under
 * {@code target/cluster-logs/TEST_CLASS/}, kept after the run for diagnosis.
 */
public final class NetnsCluster implements BeforeAllCallback, BeforeEachCallback, AfterEachCallback, AfterAllCallback {

    /** First master port handed out; each job takes the next one, so no job meets a socket in TIME_WAIT. */
    private static final int FIRST_PORT = 29500;

    /** Bound on one cluster.sh call (up of a few hosts takes about a second). */
    private static final Duration SCRIPT_TIMEOUT = Duration.ofSeconds(60);

    private static final AtomicInteger RUNS = new AtomicInteger();

    private final int hosts;
    private final String run;
    private final Path script;
    private final List<HostProcess> started = new CopyOnWriteArrayList<>();
    private final AtomicInteger nextPort = new AtomicInteger(FIRST_PORT);
    private final AtomicInteger processCount = new AtomicInteger();
    private volatile boolean up;
    private volatile Thread shutdownHook;
    private volatile Path logDir = Path.of("target", "cluster-logs");
    private volatile String testName = "setup";

    /**
     * A cluster of {@code hosts} hosts, 1..hosts, built before the test class runs.
     *
     * @param hosts number of hosts, 1..200
     */
    public NetnsCluster(int hosts) {
        if (hosts < 1 || hosts > 200) {
            throw new IllegalArgumentException("hosts must be 1..200, got " + hosts);
        }
        this.hosts = hosts;
        // run ids are 1-12 characters of a-z0-9: "j", this JVM's pid in base 36, a counter
        this.run = "j" + Long.toString(ProcessHandle.current().pid(), 36) + Integer.toString(RUNS.incrementAndGet(), 36);
        this.script = findScript();
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        assumeTrue(isRoot(), "the namespace cluster needs root (network namespaces); CI runs the tests as root");
        ScriptResult check = runScript(List.of("check"));
        assumeTrue(check.exitCode == 0, "network namespaces are not available here: " + check.output.strip());
        logDir = Path.of("target", "cluster-logs", context.getRequiredTestClass().getSimpleName());
        Files.createDirectories(logDir);
        try (var old = Files.list(logDir)) { // a previous run's logs would be mistaken for this one's
            for (Path p : old.toList()) {
                Files.deleteIfExists(p);
            }
        }
        Thread hook = new Thread(this::tearDownQuietly, "netns-cluster-" + run + "-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        shutdownHook = hook;
        up = true; // from here on the teardown must run, even if `up` fails halfway
        script("up", Integer.toString(hosts));
        startWatchdog();
    }

    /** {@code cluster.sh watch}: tears the run down if this JVM dies without running its hooks. */
    private void startWatchdog() throws IOException {
        List<String> argv = new ArrayList<>(List.of("bash", script.toString(), "--run", run, "--owner",
                Long.toString(ProcessHandle.current().pid()), "watch"));
        if (Files.isExecutable(Path.of("/usr/bin/setsid")) || Files.isExecutable(Path.of("/bin/setsid"))) {
            argv.add(0, "setsid"); // its own session: a Ctrl-C aimed at Maven does not reach it
        }
        new ProcessBuilder(argv).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectOutput(logDir.resolve("watchdog.log").toFile()).start();
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        testName = context.getRequiredTestMethod().getName();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        killEverything();
        if (up) {
            for (int host = 1; host <= hosts; host++) {
                script("clear", Integer.toString(host));
            }
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        tearDownQuietly();
        Thread hook = shutdownHook;
        if (hook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // the JVM is shutting down: the hook runs (or ran) anyway
            }
        }
        if (up) {
            throw new IllegalStateException("could not tear down cluster run " + run + "; see the messages above and run"
                    + " scripts/cluster.sh --run " + run + " down");
        }
    }

    /** The number of hosts, numbered 1..hosts(). */
    public int hosts() {
        return hosts;
    }

    /** The run id in every name of this cluster (d4c-RUN-hI). */
    public String run() {
        return run;
    }

    /** Host {@code host}'s network namespace, {@code d4c-RUN-hHOST}. */
    public String namespace(int host) {
        checkHost(host);
        return "d4c-" + run + "-h" + host;
    }

    /** Host {@code host}'s IPv4 address, 10.77.0.HOST. */
    public String address(int host) {
        checkHost(host);
        return "10.77.0." + host;
    }

    /** A master port not used by an earlier job of this cluster. */
    public int nextPort() {
        return nextPort.getAndIncrement();
    }

    /**
     * Starts {@code command} in host {@code host}, its output going to a file named after the
     * test and {@code name}. The process inherits this JVM's environment plus {@code env}.
     *
     * @param host 1..hosts()
     * @param name a short name for logs and messages, e.g. "node0"
     * @param env variables to add or replace
     * @param command the program and its arguments
     * @return the started process, killed after the test at the latest
     */
    public HostProcess start(int host, String name, Map<String, String> env, List<String> command) throws IOException {
        checkHost(host);
        if (!up) {
            throw new IllegalStateException("the cluster is not up");
        }
        List<String> argv = new ArrayList<>(List.of("ip", "netns", "exec", namespace(host)));
        argv.addAll(command);
        Path log = logDir.resolve(String.format("%s-%02d-%s.log", testName, processCount.incrementAndGet(), name));
        ProcessBuilder pb = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        HostProcess p = new HostProcess(name, host, pb.start(), log);
        started.add(p);
        return p;
    }

    /**
     * Starts a JVM in host {@code host} running {@code mainClass} with the test class path and the
     * same java binary as this JVM.
     */
    public HostProcess startJava(int host, String name, Map<String, String> env, List<String> jvmOptions,
            String mainClass, List<String> args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(javaBinary());
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass));
        command.addAll(args);
        return start(host, name, env, command);
    }

    /**
     * Starts ddp4j's launcher (org.ddp4j.launch.Launcher, as scripts/ddp4j-run) for node
     * {@code nodeRank} in host {@code nodeRank + 1}, one worker per node, the master at host 1.
     *
     * @param nodeRank 0..nnodes-1
     * @param nnodes number of nodes of the job
     * @param port the master port (see {@link #nextPort()})
     * @param env variables to add to the launcher's (and so its workers') environment
     * @param workerMainAndArgs the worker's main class and its arguments
     */
    public HostProcess startLauncher(int nodeRank, int nnodes, int port, Map<String, String> env,
            List<String> workerMainAndArgs) throws IOException {
        List<String> args = new ArrayList<>(List.of("--nnodes", Integer.toString(nnodes), "--node-rank",
                Integer.toString(nodeRank), "--nproc-per-node", "1", "--master-addr", address(1), "--master-port",
                Integer.toString(port)));
        args.addAll(workerMainAndArgs);
        // A small launcher heap: a store that allocates what a stranger announces fails here as it
        // would on a modest machine, instead of eating this shared one's memory.
        return startJava(nodeRank + 1, "node" + nodeRank, env, List.of("-Xmx512m", "-XX:+UseSerialGC"),
                "org.ddp4j.launch.Launcher", args);
    }

    /** The pids of every process now inside host {@code host} ({@code ip netns pids}). */
    public List<Long> pids(int host) {
        String out = script("pids", Integer.toString(host));
        return out.lines().map(String::strip).filter(s -> !s.isEmpty()).map(Long::parseLong).collect(Collectors.toList());
    }

    /**
     * Waits until no process is left in any of {@code hostsToWatch} and returns how long that took.
     *
     * @throws AssertionError naming the survivors (pid and command line) when some remain after {@code limit}
     */
    public Duration awaitNoProcesses(Duration limit, int... hostsToWatch) throws InterruptedException {
        long start = System.nanoTime();
        long deadline = start + limit.toNanos();
        while (true) {
            Map<Integer, List<Long>> left = new HashMap<>();
            for (int h : hostsToWatch) {
                List<Long> p = pids(h);
                if (!p.isEmpty()) {
                    left.put(h, p);
                }
            }
            if (left.isEmpty()) {
                return Duration.ofNanos(System.nanoTime() - start);
            }
            if (System.nanoTime() > deadline) {
                StringBuilder b = new StringBuilder("processes still running " + limit.toSeconds() + " s later:");
                left.forEach((h, ps) -> ps.forEach(pid -> b.append("\n  host ").append(h).append(" pid ").append(pid)
                        .append(": ").append(ProcessHandle.of(pid).flatMap(ph -> ph.info().commandLine()).orElse("?"))));
                throw new AssertionError(b.toString());
            }
            Thread.sleep(250);
        }
    }

    /** Takes host {@code host}'s link down ({@code ip link set eth0 down}) or up. */
    public void link(int host, boolean isUp) {
        script("link", Integer.toString(host), isUp ? "up" : "down");
    }

    /** Drops {@code percent} % (1..100) of host {@code host}'s packets at random; direction in, out or both. */
    public void loss(int host, int percent, String direction) {
        script("loss", Integer.toString(host), Integer.toString(percent), direction);
    }

    /** Drops every packet of host {@code host} in {@code direction} (in, out or both). */
    public void drop(int host, String direction) {
        script("drop", Integer.toString(host), direction);
    }

    /** Drops every packet of host {@code host} in {@code direction} except TCP packets from or to {@code sparedPort}. */
    public void dropAllBut(int host, String direction, int sparedPort) {
        script("drop", Integer.toString(host), direction, Integer.toString(sparedPort));
    }

    /** Caps host {@code host}'s bandwidth, e.g. "2mbit", in {@code direction} (in, out or both). */
    public void cap(int host, String rate, String direction) {
        script("cap", Integer.toString(host), rate, direction);
    }

    /** Removes host {@code host}'s loss, drop and cap and brings its link up. */
    public void clear(int host) {
        script("clear", Integer.toString(host));
    }

    /**
     * What host {@code host}'s faults did so far: dropped_in, dropped_out (packets), capped_in,
     * capped_out (bytes sent through a cap), overlimits_in, overlimits_out (packets a cap held back);
     * a counter without its fault in place is absent or 0.
     */
    public Map<String, Long> counters(int host) {
        Map<String, Long> counters = new HashMap<>();
        for (String line : script("counters", Integer.toString(host)).lines().toList()) {
            String[] f = line.strip().split("\\s+");
            if (f.length == 2 && f[1].matches("\\d+")) {
                counters.put(f[0], Long.parseLong(f[1]));
            }
        }
        return counters;
    }

    /** Runs scripts/cluster.sh for this run and returns its output; throws when it fails. */
    public String script(String... args) {
        ScriptResult r = runScript(List.of(args));
        if (r.exitCode != 0) {
            throw new IllegalStateException("scripts/cluster.sh --run " + run + " " + String.join(" ", args)
                    + " failed with exit code " + r.exitCode + ":\n" + r.output);
        }
        return r.output;
    }

    private record ScriptResult(int exitCode, String output) {}

    private ScriptResult runScript(List<String> args) {
        List<String> argv = new ArrayList<>(List.of("bash", script.toString(), "--run", run, "--owner",
                Long.toString(ProcessHandle.current().pid())));
        argv.addAll(args);
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            p.getOutputStream().close();
            // read while waiting: a full pipe would stall the script past the bound
            var reader = CompletableFuture.supplyAsync(() -> {
                try {
                    return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            if (!p.waitFor(SCRIPT_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                return new ScriptResult(124, "timed out after " + SCRIPT_TIMEOUT.toSeconds() + " s");
            }
            return new ScriptResult(p.exitValue(), reader.get(10, TimeUnit.SECONDS));
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return new ScriptResult(125, "cannot run " + argv + ": " + e);
        }
    }

    /** Kills every started process (and its descendants), then whatever else is left in the hosts. */
    private void killEverything() {
        for (HostProcess p : started) {
            p.kill();
        }
        started.clear();
        if (up) {
            for (int host = 1; host <= hosts; host++) {
                for (long pid : pids(host)) {
                    ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                }
            }
        }
    }

    private synchronized void tearDownQuietly() {
        if (!up) {
            return;
        }
        for (HostProcess p : started) {
            p.kill();
        }
        started.clear();
        ScriptResult r = runScript(List.of("down")); // kills what is left in the namespaces, then deletes them
        if (r.exitCode == 0) {
            up = false;
        } else {
            System.err.println("NetnsCluster: scripts/cluster.sh --run " + run + " down failed:\n" + r.output);
        }
    }

    private void checkHost(int host) {
        if (host < 1 || host > hosts) {
            throw new IllegalArgumentException("host " + host + " does not exist: this cluster has hosts 1.." + hosts);
        }
    }

    /** The java binary of this JVM, so the hosts run the same Java as the tests. */
    static String javaBinary() {
        return ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }

    private static boolean isRoot() {
        try {
            return Files.readAllLines(Path.of("/proc/self/status")).stream()
                    .filter(l -> l.startsWith("Uid:")).anyMatch(l -> l.split("\\s+")[2].equals("0")); // effective uid
        } catch (IOException e) {
            return false;
        }
    }

    /** scripts/cluster.sh, found from the working directory (the java module when Maven runs the tests) upwards. */
    static Path findScript() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("scripts").resolve("cluster.sh");
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        return Path.of("scripts", "cluster.sh"); // `check` then fails and the class is skipped with the reason
    }
}
