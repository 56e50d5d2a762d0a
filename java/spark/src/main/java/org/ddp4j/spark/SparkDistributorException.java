package org.ddp4j.spark;

/**
 * A {@link SparkDistributor} job that did not finish: Spark could not run the barrier stage (too
 * few task slots, dynamic allocation on), the job was cancelled, or it ran past its timeout. A
 * failed worker is the subclass {@link WorkerFailedException}. The message says what happened and
 * what to change; the cause is Spark's exception, when there is one.
 */
public class SparkDistributorException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message what happened and how to fix it */
    public SparkDistributorException(String message) {
        super(message);
    }

    /**
     * @param message what happened and how to fix it
     * @param cause Spark's exception
     */
    public SparkDistributorException(String message, Throwable cause) {
        super(message, cause);
    }
}
