package org.ddp4j.launch;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.ddp4j.distributed.store.TcpStore;
import org.ddp4j.multiprocessing.WorkerJvm;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * {@code ddp4j-run}: the torchrun-style launcher. It starts {@code --nproc-per-node} workers on
 * this node with the environment that {@code Distributed.initProcessGroup("gloo")} (init method env://) reads,
 * prefixes their output with their rank, and when one fails stops the others (here and on the
 * other nodes) and exits non-zero naming the failed rank and its exit code.
 *
 * <pre>
 * scripts/ddp4j-run --nproc-per-node 2 org.ddp4j.examples.LinearDemo
 * scripts/ddp4j-run --nnodes 2 --node-rank 1 --master-addr node0 --nproc-per-node 4 -- ./train.sh --epochs 3
 * java -cp "target/app.jar:target/libs/*" org.ddp4j.launch.Launcher --nproc-per-node 2 my.Main
 * java -jar ddp4j-0.1.0-launcher.jar --classpath target/app.jar --nproc-per-node 2 my.Main
 * </pre>
 *
 * <p>A first positional argument that names a class on the workers' class path (the launcher's
 * own, then {@code --classpath}), in a package or the default package, starts each worker as a JVM
 * with the same java binary and that class path (plus {@code DDP4J_JAVA_OPTS}); an executable or
 * a command on PATH is run as a command; anything else is a usage error naming both. Node 0's launcher serves a {@code TcpStore} on
 * {@code --master-addr:--master-port}; every launcher and every worker is a client of it, and
 * ranks are assigned through it, so nodes may run different numbers of workers.
 *
 * <p>Each worker gets {@code RANK}, {@code LOCAL_RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_WORLD_SIZE}, {@code GROUP_RANK}, {@code GROUP_WORLD_SIZE}, {@code MASTER_ADDR},
 * {@code MASTER_PORT}, {@code DDP4J_AGENT_STORE=1}, {@code DDP4J_RESTART_COUNT},
 * {@code DDP4J_MAX_RESTARTS}; {@code DDP4J_PROGRESS=1}
 * for rank 0 when the launcher's stdout is a terminal (or the launcher's {@code DDP4J_PROGRESS} is 1),
 * {@code 0} otherwise ({@link RankZeroProgress}). Unlike torchrun it does not set
 * {@code OMP_NUM_THREADS=1}: each worker's intra-op threads default to the node's CPUs divided by
 * {@code LOCAL_WORLD_SIZE} ({@link org.ddp4j.tensor.Threads}), and an {@code OMP_NUM_THREADS} the
 * user set reaches the workers and wins. The launcher says once on stderr how many each worker
 * gets ({@code ddp4j-run: intra-op threads per worker: 4 (8 CPUs / 2 workers on this node; ...)}).
 *
 * <p>Liveness. The launchers keep each other alive through the store ({@link KeepAlive}): every
 * {@code --keepalive-interval} (default 1 s, or {@code DDP4J_KEEPALIVE_INTERVAL}) each bumps its
 * counter and reads the others'; a node silent for {@code --keepalive-timeout} (default 20 s, or
 * {@code DDP4J_KEEPALIVE_TIMEOUT}), or a store that does not answer that long, is lost, and every
 * launcher stops its workers and exits 1 naming it ({@code lost node 1 (10.77.0.2): no keep-alive
 * for 20 s}). Every store call of the launcher has a deadline ({@link DeadlineStore}). A failed
 * worker is reported on every node as the attempt's root cause
 * ({@code rank 1 (node 1, local rank 0) was killed by signal 9}), chosen by {@link RootCause}, with
 * the failures it caused listed apart. Workers die with their launcher, however it dies: they watch
 * their stdin pipe from it ({@link WorkerMain}, {@link WorkerCommand#LIFELINE_SCRIPT}), so they see
 * an empty stdin, as torchrun's do.
 */
@Command(
        name = "ddp4j-run",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        versionProvider = org.ddp4j.internal.VersionProvider.class,
        usageHelpAutoWidth = true,
        description = {
            "Starts data-parallel workers the way torchrun does.",
            "MAIN_CLASS_OR_COMMAND is a main class on this launcher's class path or --classpath (run as a JVM"
                    + " with that class path and DDP4J_JAVA_OPTS) or a command. Options end at the first positional"
                    + " argument or at '--'."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:all workers exited with code 0",
            "1:a worker failed, a node was lost (keep-alive), or rendezvous failed",
            "2:invalid command line"
        })
public final class Launcher implements Callable<Integer> {
    /** The store's port with several nodes when --master-port is not given (torchrun's). */
    static final int DEFAULT_MASTER_PORT = 29500;

    @Spec
    private CommandSpec spec;

    @Option(names = {"--nproc-per-node", "--nproc_per_node"}, paramLabel = "N", defaultValue = "1",
            description = "Workers to start on this node (default: ${DEFAULT-VALUE}).")
    private int nprocPerNode;

    @Option(names = "--nnodes", paramLabel = "N", defaultValue = "1",
            description = "Number of nodes, one launcher each (default: ${DEFAULT-VALUE}).")
    private int nnodes;

    @Option(names = {"--node-rank", "--node_rank"}, paramLabel = "R", defaultValue = "0",
            description = "This node's rank, 0..nnodes-1 (default: ${DEFAULT-VALUE}).")
    private int nodeRank;

    @Option(names = {"--master-addr", "--master_addr"}, paramLabel = "HOST", defaultValue = "127.0.0.1",
            description = "Host of node 0, which serves the store (default: ${DEFAULT-VALUE}).")
    private String masterAddr;

    @Option(names = {"--master-port", "--master_port"}, paramLabel = "PORT",
            description = "Port of the store on node 0 (default: " + DEFAULT_MASTER_PORT + " with --nnodes above 1;"
                    + " on a single node, a free port the launcher picks and hands to its workers, as 0 does).")
    private Integer masterPort;

    @Option(names = "--standalone",
            description = "A single-node job on this machine, as torchrun's --standalone: --nnodes 1, --master-addr"
                    + " 127.0.0.1 and a free port picked by the launcher, so two jobs on one machine never collide.")
    private boolean standalone;

    @Option(names = {"--max-restarts", "--max_restarts"}, paramLabel = "N", defaultValue = "0",
            description = "Restart the worker group up to N times after a failure (default: ${DEFAULT-VALUE}).")
    private int maxRestarts;

    @Option(names = {"--rdzv-timeout", "--rdzv_timeout"}, paramLabel = "SECONDS", defaultValue = "300",
            description = "How long to wait for the other nodes (default: ${DEFAULT-VALUE}).")
    private int rdzvTimeoutSeconds;

    @Option(names = {"--keepalive-interval", "--keepalive_interval"}, paramLabel = "SECONDS",
            description = "How often each launcher writes its keep-alive to the store and reads the other"
                    + " nodes' (default: $DDP4J_KEEPALIVE_INTERVAL, else " + LaunchConfig.DEFAULT_KEEPALIVE_INTERVAL
                    + "). Decimals allowed.")
    private String keepAliveInterval;

    @Option(names = {"--keepalive-timeout", "--keepalive_timeout"}, paramLabel = "SECONDS",
            description = "A node whose keep-alive stays silent this long, or a store that does not answer this"
                    + " long, is declared lost: every launcher then stops its workers and exits non-zero"
                    + " (default: $DDP4J_KEEPALIVE_TIMEOUT, else " + LaunchConfig.DEFAULT_KEEPALIVE_TIMEOUT
                    + "). Pauses shorter than this (a stopped process, a long GC) are ridden out.")
    private String keepAliveTimeout;

    @Option(names = {"--classpath", "--class-path"}, paramLabel = "CLASSPATH",
            description = "Class path added after the launcher's own for the workers and for finding MAIN_CLASS:"
                    + " ':'-separated, 'dir/*' for every jar in dir, as java -cp; what java -jar on the launcher jar"
                    + " needs to run your classes (default: $DDP4J_CLASSPATH).")
    private String classPath;

    @Parameters(paramLabel = "MAIN_CLASS_OR_COMMAND", arity = "0..*",
            description = "The worker: a main class or a command, then its arguments.")
    private List<String> command = new ArrayList<>();

    private final Map<String, String> env;
    private final PrintStream out;
    private final PrintStream err;
    private final ClusterLaunchDefaults clusterDefaults;

    private Launcher(Map<String, String> env, PrintStream out, PrintStream err) {
        this.env = env;
        this.out = out;
        this.err = err;
        this.clusterDefaults = new ClusterLaunchDefaults(env);
    }

    /**
     * Runs the launcher and exits the JVM with its exit code.
     *
     * @param args the command line, as for {@code scripts/ddp4j-run}
     */
    public static void main(String[] args) {
        Notices.quietSlf4jWithoutProvider();
        System.exit(run(args));
    }

    /**
     * Runs the launcher in this JVM with this process's environment, writing to
     * {@link System#out} and {@link System#err}, and returns its exit code: 0 when every worker
     * exited 0, 1 when a worker or the rendezvous failed, 2 for an invalid command line.
     *
     * @param args the command line, as for {@code scripts/ddp4j-run}
     * @return the exit code
     */
    public static int run(String... args) {
        return run(System.out, System.err, args);
    }

    /**
     * Like {@link #run(String...)}, with the workers' prefixed stdout going to {@code out}, and their
     * prefixed stderr plus the launcher's own messages going to {@code err}.
     *
     * @param out destination of the workers' stdout lines
     * @param err destination of the workers' stderr lines and of the launcher's messages
     * @param args the command line, as for {@code scripts/ddp4j-run}
     * @return the exit code
     */
    public static int run(PrintStream out, PrintStream err, String... args) {
        return run(System.getenv(), out, err, args);
    }

    /** As {@link #run(PrintStream, PrintStream, String...)}, with {@code env} as the workers' base environment. */
    static int run(Map<String, String> env, PrintStream out, PrintStream err, String... args) {
        Launcher launcher = new Launcher(env, out, err);
        CommandLine cl = new CommandLine(launcher);
        cl.setStopAtPositional(true);
        cl.setDefaultValueProvider(launcher.clusterDefaults); // PET_* (Kubeflow), then SLURM, then the annotations
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        cl.setParameterExceptionHandler((ex, a) -> {
            PrintWriter w = ex.getCommandLine().getErr();
            w.println("ddp4j-run: " + ex.getMessage());
            w.println("Try 'ddp4j-run --help' for more information.");
            w.flush();
            return CommandLine.ExitCode.USAGE;
        });
        cl.setExecutionExceptionHandler((ex, c, parsed) -> {
            PrintWriter w = c.getErr();
            w.println("ddp4j-run: internal error: " + ex);
            ex.printStackTrace(w);
            w.flush();
            return CommandLine.ExitCode.SOFTWARE;
        });
        return cl.execute(args);
    }

    /**
     * Validates the options and runs the agent. Called by picocli; use {@link #run(String...)}.
     *
     * @return the exit code
     */
    @Override
    public Integer call() {
        if (!clusterDefaults.used().isEmpty()) {
            err.println("ddp4j-run: from the environment: " + String.join(", ", clusterDefaults.used()));
        }
        applyStandalone();
        validate();
        warnOfLauncherFlagsAfterTheMain();
        Optional<String> modulePath = WorkerJvm.classPathProblem("java -cp \"app.jar:libs/*\" org.ddp4j.launch.Launcher ..."
                + " or java -jar ddp4j-VERSION-launcher.jar --classpath app.jar ...");
        if (modulePath.isPresent()) {
            throw usage(modulePath.get());
        }
        Duration interval = seconds("--keepalive-interval", KeepAlive.INTERVAL_ENV, keepAliveInterval,
                LaunchConfig.DEFAULT_KEEPALIVE_INTERVAL);
        Duration timeout = seconds("--keepalive-timeout", KeepAlive.TIMEOUT_ENV, keepAliveTimeout,
                LaunchConfig.DEFAULT_KEEPALIVE_TIMEOUT);
        if (timeout.compareTo(interval.multipliedBy(2)) < 0) {
            throw usage("--keepalive-timeout (" + KeepAlive.seconds(timeout) + " s) must be at least twice"
                    + " --keepalive-interval (" + KeepAlive.seconds(interval) + " s), or one late keep-alive"
                    + " would count as a lost node");
        }
        // The workers' extra class path travels in their environment (read by WorkerCommand and kept by the workers).
        Map<String, String> env = classPath == null ? this.env : withClassPath(this.env, classPath);
        boolean progressBar;
        try {
            progressBar = RankZeroProgress.wanted(this.env, RankZeroProgress.isTerminal(out));
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
        LaunchConfig cfg = new LaunchConfig(nprocPerNode, nnodes, nodeRank, masterAddr.trim(), masterPort,
                maxRestarts, Duration.ofSeconds(rdzvTimeoutSeconds), interval, timeout, command, env, out, err, progressBar);
        return new Agent(cfg).run();
    }

    private static Map<String, String> withClassPath(Map<String, String> env, String classPath) {
        Map<String, String> copy = new java.util.HashMap<>(env);
        copy.put(WorkerCommand.CLASSPATH_ENV, classPath.trim());
        return copy;
    }

    /** --standalone: one node on this machine, the store on a free loopback port. */
    private void applyStandalone() {
        if (!standalone) {
            return;
        }
        if (nnodes != 1) {
            throw usage("--standalone runs a single-node job, but --nnodes is " + nnodes + "; drop one of them");
        }
        if (masterPort != null && masterPort != 0) {
            throw usage("--standalone picks a free port itself; drop --master-port " + masterPort);
        }
        masterPort = 0;
        masterAddr = "127.0.0.1";
    }

    /**
     * torchrun's trap: a launcher flag after the main class goes to the workers, and the launcher
     * runs with its default instead. Says so on stderr (the workers may take a flag of that name).
     */
    private void warnOfLauncherFlagsAfterTheMain() {
        for (String arg : command.subList(Math.min(1, command.size()), command.size())) {
            String name = arg.contains("=") ? arg.substring(0, arg.indexOf('=')) : arg;
            boolean standard = name.equals("--help") || name.equals("--version"); // the workers' own, as often
            if (name.startsWith("--") && !standard && spec.findOption(name) != null) {
                err.println("ddp4j-run: warning: " + name + " comes after " + command.get(0) + ", so it goes to the"
                        + " workers and the launcher uses its own default; put launcher flags before the main class");
            }
        }
    }

    private void validate() {
        if (nprocPerNode < 1) {
            throw usage("--nproc-per-node must be at least 1, got " + nprocPerNode);
        }
        if (nnodes < 1) {
            throw usage("--nnodes must be at least 1, got " + nnodes);
        }
        if (nodeRank < 0 || nodeRank >= nnodes) {
            throw usage("--node-rank " + nodeRank + " is out of range for --nnodes " + nnodes
                    + " (node ranks are 0.." + (nnodes - 1) + ")");
        }
        if (masterAddr == null || masterAddr.isBlank()) {
            throw usage("--master-addr must not be empty");
        }
        if (masterPort == null) {
            masterPort = nnodes == 1 ? 0 : DEFAULT_MASTER_PORT;
        }
        if (masterPort < 0 || masterPort > 65535) {
            throw usage("--master-port must be in 1..65535 (or 0 on a single node: a free port), got " + masterPort);
        }
        if (masterPort == 0 && nnodes > 1) {
            throw usage("--master-port 0 (a port the launcher picks) works on a single node only: with --nnodes " + nnodes
                    + " the other nodes' launchers must know the port in advance; give the same --master-port to all");
        }
        if (maxRestarts < 0) {
            throw usage("--max-restarts must be at least 0, got " + maxRestarts);
        }
        if (rdzvTimeoutSeconds < 1) {
            throw usage("--rdzv-timeout must be at least 1 second, got " + rdzvTimeoutSeconds);
        }
        if (command.isEmpty() || command.get(0).isBlank()) {
            throw usage("missing MAIN_CLASS_OR_COMMAND: the worker to start, e.g. "
                    + "ddp4j-run --nproc-per-node 2 org.ddp4j.examples.LinearDemo");
        }
    }

    /**
     * A duration in seconds from the option, else from the environment variable, else the default;
     * a value that is not a positive number is a usage error naming where it came from.
     */
    private Duration seconds(String option, String envVar, String given, String fallback) {
        String source = option;
        String text = given;
        if (text == null) {
            text = env.get(envVar);
            source = envVar;
        }
        if (text == null || text.isBlank()) {
            text = fallback;
            source = option + " default";
        }
        double value;
        try {
            value = Double.parseDouble(text.trim());
        } catch (NumberFormatException e) {
            throw usage(source + " must be a number of seconds, got '" + text + "'");
        }
        if (!(value >= 0.05 && value <= 86_400)) {
            throw usage(source + " must be between 0.05 and 86400 seconds, got " + text.trim());
        }
        return Duration.ofNanos(Math.round(value * 1e9));
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
