package org.ddp4j.distributed;

/**
 * A distributed operation failed: a peer died, a collective's inputs disagree across ranks, a
 * store could not be reached. The message names what failed and how to fix it; the accessors
 * give the same facts as data, so that code decides by them, never by the message's words. The
 * subclasses say what kind of failure it was: {@link PeerLostException},
 * {@link CollectiveMismatchException}, {@link DistributedTimeoutException}, {@link StoreException}.
 * Mirrors PyTorch's {@code torch.distributed.DistBackendError}.
 */
public class DistributedException extends RuntimeException {
    private final ErrorFacts facts;
    private String base;
    private String hint;

    public DistributedException(String message) {
        this(message, ErrorFacts.NONE, null);
    }

    public DistributedException(String message, Throwable cause) {
        this(message, ErrorFacts.NONE, cause);
    }

    DistributedException(String message, ErrorFacts facts, Throwable cause) {
        super(message, cause);
        this.facts = facts == null ? ErrorFacts.NONE : facts;
        this.base = message;
    }

    /** The facts ({@link ErrorFacts#NONE} for an exception made from a message alone). */
    ErrorFacts facts() {
        return facts == null ? ErrorFacts.NONE : facts;
    }

    /** This rank in the group whose operation failed; -1 when unknown. */
    public int rank() {
        return facts().rank();
    }

    /**
     * The operation that failed, in words, e.g. {@code allReduce(AVG) of 1,234 float32 elements (#57,
     * DDP bucket 2 of 3)}; null when unknown.
     */
    public String op() {
        return facts().op();
    }

    /** The group's collective number of the failed operation, from 1; 0 when unknown. */
    public long sequenceNumber() {
        return facts().sequenceNumber();
    }

    /** What carried the operation: {@code gloo}, {@code shared memory}, {@code nccl}, {@code store}; null when unknown. */
    public String transport() {
        return facts().transport();
    }

    /**
     * The advice that {@link #explained} added to the native message (e.g. the {@code ddp.join()}
     * hint for uneven inputs); null when none was added.
     */
    public String hint() {
        return hint;
    }

    /**
     * This failure with a caller's words around its message: an exception of the same class with the
     * same facts, whose message is {@code prefix + message + hint} and whose cause is this one, where
     * {@code message} is this failure's message without the hint it already carries (a failure
     * carries at most one hint: the one of the caller that knows most, e.g. SyncBatchNorm's rather than
     * DDP's). What DDP and SyncBatchNorm use to say where a collective failed and what to do.
     *
     * @param prefix put before the message (e.g. the layer), or null
     * @param hint appended to the message, or null; {@link #hint()} returns it
     */
    public DistributedException explained(String prefix, String hint) {
        String prefixed = (prefix == null ? "" : prefix) + base;
        DistributedException copy = copy(prefixed + (hint == null ? "" : hint), facts());
        copy.base = prefixed;
        copy.hint = hint;
        return copy;
    }

    /** This exception's class and message with other facts; its cause is this one. */
    DistributedException withFacts(ErrorFacts other) {
        return copy(getMessage(), other);
    }

    /**
     * A new exception of this class with {@code message}, {@code facts} and this exception as its
     * cause; subclasses override it to keep their class through {@link #explained}.
     */
    DistributedException copy(String message, ErrorFacts facts) {
        return new DistributedException(message, facts, this);
    }
}
