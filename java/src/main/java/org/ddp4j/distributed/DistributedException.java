package org.ddp4j.distributed;

/**
 * A distributed operation failed: a peer died, a collective's inputs disagree across ranks, a
 * store could not be reached. The message names what failed and how to fix it.
 * Mirrors PyTorch's {@code torch.distributed.DistBackendError}.
 */
public class DistributedException extends RuntimeException {
    public DistributedException(String message) {
        super(message);
    }

    public DistributedException(String message, Throwable cause) {
        super(message, cause);
    }
}
