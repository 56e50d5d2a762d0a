package org.ddp4j.distributed;

/**
 * The ranks called different collectives (another op, size, dtype, root or order), found before
 * any data moved: each rank names its own call and the peer's. The tensors' contents are
 * undefined. Mirrors the mismatch errors of PyTorch's {@code TORCH_DISTRIBUTED_DEBUG=DETAIL}.
 */
public class CollectiveMismatchException extends DistributedException {

    /**
     * The hint a mismatch carries when either call is a DDP gradient bucket's all-reduce: the usual
     * reason one rank is elsewhere is that it ran out of data (uneven inputs).
     */
    public static final String UNEVEN_INPUTS_HINT = ". If the ranks have different numbers of batches (uneven inputs),"
            + " wrap the training loop in try (var join = ddp.join()) { ... }: ranks that run out of data then shadow"
            + " the others' gradient all-reduces";

    public CollectiveMismatchException(String message) {
        super(message);
    }

    CollectiveMismatchException(String message, ErrorFacts facts, Throwable cause) {
        super(message, facts, cause);
    }

    /** Whether either call is a DDP gradient bucket's all-reduce. */
    public boolean involvesDdpBucket() {
        return (localCall() != null && localCall().isDdpBucket()) || (peerCall() != null && peerCall().isDdpBucket());
    }

    /** The rank whose call differs from this rank's; -1 when unknown. */
    public int peerRank() {
        return facts().peerRank();
    }

    /** This rank's call; null when the error did not come with one. */
    public CollectiveCall localCall() {
        return facts().localCall();
    }

    /** The peer's call; null when unknown (e.g. the peer's side of a transfer is missing). */
    public CollectiveCall peerCall() {
        return facts().peerCall();
    }

    @Override
    DistributedException copy(String message, ErrorFacts facts) {
        return new CollectiveMismatchException(message, facts, this);
    }
}
