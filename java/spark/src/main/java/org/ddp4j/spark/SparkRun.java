package org.ddp4j.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.spark.SparkContext;
import org.ddp4j.internal.VersionProvider;
import org.ddp4j.multiprocessing.WorkerJvm;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * A Spark application that runs one ddp4j main with {@link SparkDistributor}, as torchrun does on
 * one machine: {@code spark-submit --class org.ddp4j.spark.SparkRun ddp4j-VERSION-launcher.jar
 * -n 2 org.ddp4j.examples.SparkConvNetTrain --epochs 1}. It prints each rank's last stdout lines
 * ({@code [rankN]: ...}) and exits 0, or prints the failure (the failed rank and its stderr) and
 * exits 1. Everything after the main class is the main's.
 */
@Command(name = "SparkRun", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Runs a ddp4j training main on N ranks in a Spark barrier stage (start it with spark-submit).")
public final class SparkRun implements Callable<Integer> {
    @Option(names = {"-n", "--num-processes"}, required = true, description = "Ranks, one Spark task each.")
    int numProcesses;

    @Option(names = "--timeout", paramLabel = "SECONDS",
            description = "Stop the job after this many seconds (default: a day).")
    long timeoutSeconds = SparkDistributor.DEFAULT_TIMEOUT.toSeconds();

    @Option(names = "--java-options", paramLabel = "OPTIONS",
            description = "JVM options for every worker, e.g. \"-Xmx2g\" (after DDP4J_JAVA_OPTS).")
    String javaOptions = "";

    @Option(names = "--env", paramLabel = "NAME=VALUE", description = "A variable for every worker's environment (repeatable).")
    Map<String, String> env = new LinkedHashMap<>();

    @Option(names = "--output-lines", description = "Last stdout lines of each rank to print (default: ${DEFAULT-VALUE}).")
    int outputLines = SparkDistributor.DEFAULT_OUTPUT_LINES;

    @Parameters(index = "0", paramLabel = "MAIN_CLASS", description = "The training main, on the executors' class path.")
    String mainClass;

    @Parameters(index = "1..*", paramLabel = "ARGS", description = "Its arguments.")
    List<String> args = new ArrayList<>();

    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new SparkRun());
        cl.setStopAtPositional(true); // the main's own options are its arguments
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr().println("SparkRun: error: " + e.getMessage());
            return 1;
        });
        System.exit(cl.execute(args));
    }

    @Override
    public Integer call() {
        SparkDistributor distributor = new SparkDistributor(numProcesses).timeout(Duration.ofSeconds(timeoutSeconds))
                .outputLines(outputLines).javaOptions(WorkerJvm.splitOptions(javaOptions).toArray(String[]::new));
        env.forEach(distributor::env);
        SparkContext sc = SparkContext.getOrCreate();
        try {
            for (WorkerResult r : distributor.sparkContext(sc).run(mainClass, args.toArray(String[]::new))) {
                for (String line : r.lastLines()) {
                    System.out.println("[rank" + r.rank() + "]: " + line);
                }
            }
            return 0;
        } finally {
            sc.stop();
        }
    }
}
