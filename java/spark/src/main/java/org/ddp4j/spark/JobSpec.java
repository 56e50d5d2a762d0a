package org.ddp4j.spark;

import java.io.Serializable;
import java.util.List;
import java.util.Map;

/**
 * What every Spark task of a {@link SparkDistributor} job needs to start its rank's worker; it
 * travels to the executors inside the task. Serializable and immutable.
 *
 * @param mainClass the trainer's main class
 * @param args its arguments
 * @param env variables added to each worker's environment (after the executor's own)
 * @param javaOptions JVM options for each worker, after those of DDP4J_JAVA_OPTS
 * @param timeoutMillis how long a worker may run before its task stops it
 * @param outputLines how many last stdout lines each task returns
 * @param exampleShape the shape of one example for runOnPartitions, or null for run
 */
record JobSpec(String mainClass, List<String> args, Map<String, String> env, List<String> javaOptions, long timeoutMillis,
        int outputLines, long[] exampleShape) implements Serializable {
    private static final long serialVersionUID = 1L;

    JobSpec {
        args = List.copyOf(args);
        env = Map.copyOf(env);
        javaOptions = List.copyOf(javaOptions);
        exampleShape = exampleShape == null ? null : exampleShape.clone();
    }
}
