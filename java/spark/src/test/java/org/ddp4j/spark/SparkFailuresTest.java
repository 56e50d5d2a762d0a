package org.ddp4j.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.apache.spark.SparkException;
import org.junit.jupiter.api.Test;

/** The driver finds the worker's failure in Spark's message, and argument errors name the fix. */
class SparkFailuresTest {
    /** The shape of the message Spark's DAGScheduler gives a failed barrier ResultStage (Spark 4.2). */
    private static final String STAGE_FAILURE = "Job aborted due to stage failure: Could not recover from a failed"
            + " barrier ResultStage. Most recent failure reason: Stage failed because barrier task ResultTask(0, 1)"
            + " finished unsuccessfully.\norg.ddp4j.spark.WorkerFailedException: ddp4j rank 1 (host 127.0.0.1, local"
            + " rank 1, pid 4242) exited with code 1; its last lines on stderr:\nException in thread \"main\""
            + " java.lang.IllegalStateException: boom\n\tat org.ddp4j.spark.BarrierTask.supervise(BarrierTask.java:195)\n"
            + "\tat org.apache.spark.rdd.RDDBarrier.$anonfun$mapPartitions$2(RDDBarrier.scala:51)\n";

    @Test
    void theWorkersFailureIsFoundInSparksMessage() {
        SparkException spark = new SparkException(STAGE_FAILURE);
        SparkDistributorException e = SparkFailures.translate(spark, 2);
        WorkerFailedException w = assertInstanceOf(WorkerFailedException.class, e);
        assertEquals(1, w.rank());
        assertEquals("ddp4j rank 1 (host 127.0.0.1, local rank 1, pid 4242) exited with code 1; its last lines on stderr:\n"
                + "Exception in thread \"main\" java.lang.IllegalStateException: boom", w.getMessage());
        assertSame(spark, w.getCause());
    }

    @Test
    void aTaskThatFailedWithoutAWorkerFailureIsNamedByItsRank() {
        SparkException spark = new SparkException("Job aborted due to stage failure: Could not recover from a failed"
                + " barrier ResultStage. Most recent failure reason: Stage failed because barrier task ResultTask(3, 1)"
                + " finished unsuccessfully.\nExecutorLostFailure (executor 1 exited caused by one of the running tasks)"
                + " Reason: Command exited with code 137");
        SparkDistributorException e = SparkFailures.translate(spark, 2);
        assertEquals(SparkDistributorException.class, e.getClass());
        assertTrue(e.getMessage().startsWith("ddp4j rank 1's Spark task failed. Spark said: Job aborted")
                && e.getMessage().endsWith("ExecutorLostFailure (executor 1 exited caused by one of the running tasks) Reason:"
                        + " Command exited with code 137"), e.getMessage());
    }

    @Test
    void tooFewSlotsGetsTheSettingsThatFixIt() {
        SparkException spark = new SparkException("[SPARK-24819]: Barrier execution mode does not allow run a barrier"
                + " stage that requires more slots than the total number of slots in the cluster currently.");
        SparkDistributorException e = SparkFailures.translate(spark, 4);
        assertEquals(SparkDistributorException.class, e.getClass());
        assertTrue(e.getMessage().contains("fewer free task slots than the 4 tasks")
                && e.getMessage().contains("spark.executor.cores=1"), e.getMessage());
    }

    @Test
    void badArgumentsAreRefusedBeforeAnyJob() {
        assertThrows(IllegalArgumentException.class, () -> new SparkDistributor(0));
        IllegalArgumentException rank = assertThrows(IllegalArgumentException.class,
                () -> new SparkDistributor(2).env("RANK", "3"));
        assertTrue(rank.getMessage().contains("set by each Spark task"), rank.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new SparkDistributor(2).timeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> new SparkDistributor(2).outputLines(-1));
    }
}
