package org.ddp4j.spark;

import java.io.Serializable;
import java.util.List;

/**
 * What one rank of a {@link SparkDistributor} job left behind when it finished: its rank, the host
 * its Spark task ran on, and the last lines its worker printed on stdout (at most
 * {@link SparkDistributor#outputLines(int)}, without the {@code [rankN]: } prefix they carry in
 * the executor's log). PySpark's {@code TorchDistributor.run} returns rank 0's return value; a
 * JVM main has none, so its last lines stand in for it.
 *
 * @param rank the worker's RANK
 * @param host the executor's host, as Spark's {@code BarrierTaskInfo} names it
 * @param lastLines the worker's last stdout lines, oldest first
 */
public record WorkerResult(int rank, String host, List<String> lastLines) implements Serializable {
    private static final long serialVersionUID = 1L;

    public WorkerResult {
        lastLines = List.copyOf(lastLines);
    }
}
