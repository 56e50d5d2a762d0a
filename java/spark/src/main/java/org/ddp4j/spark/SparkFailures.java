package org.ddp4j.spark;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns the exception of a failed {@link SparkDistributor} job into one that names the root cause.
 * Spark reports a failed barrier stage as a {@code SparkException} whose message embeds the failed
 * task's exception as text ({@code "... Most recent failure reason: ... finished unsuccessfully.\n
 * org.ddp4j.spark.WorkerFailedException: ddp4j rank 1 ...\n\tat ..."}), not as its cause, so the
 * worker's failure is found in the chain's messages.
 */
final class SparkFailures {
    private static final String MARKER = WorkerFailedException.class.getName() + ": ";
    private static final Pattern RANK = Pattern.compile("ddp4j rank (\\d+)");
    /** Spark's name of the failed barrier task: ResultTask(stage, partition), the partition being the rank. */
    private static final Pattern FAILED_TASK = Pattern.compile("barrier task ResultTask\\(\\d+, (\\d+)\\)");

    private SparkFailures() {}

    /** The exception {@link SparkDistributor#run} throws for {@code failure}, Spark's exception as its cause. */
    static SparkDistributorException translate(Throwable failure, int numProcesses) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof WorkerFailedException w) { // local mode can keep the object
                return new WorkerFailedException(w.getMessage(), w.rank(), failure);
            }
            String text = t.getMessage();
            int at = text == null ? -1 : text.indexOf(MARKER);
            if (at >= 0) {
                String message = upToStackTrace(text.substring(at + MARKER.length()));
                Matcher m = RANK.matcher(message);
                return new WorkerFailedException(message, m.find() ? Integer.parseInt(m.group(1)) : -1, failure);
            }
        }
        String text = String.valueOf(failure.getMessage());
        String hint = "";
        if (text.contains("SPARK-24819") || text.contains("more slots than the total number of slots")) {
            hint = ": the cluster has fewer free task slots than the " + numProcesses + " tasks the barrier stage needs at"
                    + " once (SPARK-24954): give it " + numProcesses + " executor cores for spark.task.cpus each"
                    + " (e.g. --conf spark.executor.cores=1 --conf spark.task.cpus=1 and " + numProcesses
                    + " executors), or lower numProcesses";
        } else if (text.contains("SPARK-24820") || text.contains("SPARK-24821")) {
            hint = ": the RDD's lineage within the stage changes its number of partitions (union, coalesce, ...), which a"
                    + " barrier stage does not allow; give runOnPartitions rows.repartition(" + numProcesses + "), or"
                    + " rows.localCheckpoint() after materialising it (rows.count()), to keep the partitions as they are";
        } else if (text.contains("SPARK-24942") || text.contains("dynamic resource allocation")) {
            hint = ": barrier stages do not run with dynamic allocation; set spark.dynamicAllocation.enabled=false";
        }
        Matcher task = FAILED_TASK.matcher(text);
        String who = task.find() ? "ddp4j rank " + task.group(1) + "'s Spark task failed" : "the ddp4j barrier stage failed";
        return new SparkDistributorException(who + hint + ". Spark said: " + upToStackTrace(text), failure);
    }

    /** {@code text} up to its first stack frame line. */
    static String upToStackTrace(String text) {
        int frame = text.indexOf("\n\tat ");
        return (frame >= 0 ? text.substring(0, frame) : text).strip();
    }
}
