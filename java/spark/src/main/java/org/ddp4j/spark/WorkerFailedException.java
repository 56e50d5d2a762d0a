package org.ddp4j.spark;

/**
 * A ddp4j worker of a {@link SparkDistributor} job failed: it exited non-zero, was killed by a
 * signal, could not start, or ran past the job's timeout. The message names the rank, its host and
 * pid, how it ended, and its last lines on stderr (the root cause, e.g. the trainer's exception).
 *
 * <p>The Spark task of that rank throws it, which fails the barrier stage as a whole; the
 * driver's {@link SparkDistributor#run} throws it again with the same message (found in Spark's
 * {@code SparkException}, which becomes the cause) and the same {@link #rank()}. When several
 * ranks fail, a worker killed by a signal is reported before one that exited with an error: the
 * latter is usually a peer whose collective failed because of the former.
 */
public class WorkerFailedException extends SparkDistributorException {
    private static final long serialVersionUID = 1L;

    private final int rank;

    /**
     * @param message the failure, naming the rank (e.g. {@code "ddp4j rank 1 (host h, local rank 1, pid 42) was killed by signal 9 ..."})
     * @param rank the failed worker's RANK
     */
    public WorkerFailedException(String message, int rank) {
        super(message);
        this.rank = rank;
    }

    /**
     * @param message as {@link #WorkerFailedException(String, int)}
     * @param rank the failed worker's RANK
     * @param cause Spark's exception that carried the failure to the driver
     */
    public WorkerFailedException(String message, int rank, Throwable cause) {
        super(message, cause);
        this.rank = rank;
    }

    /** The RANK of the worker that failed; -1 where Spark's message did not name it. */
    public int rank() {
        return rank;
    }
}
