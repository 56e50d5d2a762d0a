package org.ddp4j.distributed;

/**
 * The rendezvous store failed: it could not be reached, refused this client, or closed the
 * connection. A store that answers too late is a {@link DistributedTimeoutException}. Mirrors
 * PyTorch's {@code torch.distributed.DistStoreError}.
 */
public class StoreException extends DistributedException {
    private final boolean portInUse;

    public StoreException(String message) {
        this(message, null, false);
    }

    public StoreException(String message, Throwable cause) {
        this(message, cause, false);
    }

    /** @param portInUse whether a store server could not listen because its port is taken */
    public StoreException(String message, Throwable cause, boolean portInUse) {
        super(message, cause);
        this.portInUse = portInUse;
    }

    StoreException(String message, ErrorFacts facts, Throwable cause) {
        super(message, facts, cause);
        this.portInUse = false;
    }

    /** Whether a store server could not listen because another process holds its port. */
    public boolean portInUse() {
        return portInUse;
    }

    @Override
    DistributedException copy(String message, ErrorFacts facts) {
        return new StoreException(message, facts, this);
    }
}
