package org.ddp4j.distributed;

import java.time.Duration;

/**
 * A store wait, rendezvous or collective did not finish within its timeout; the message names
 * what was missing, and the accessors say what was waited for and how long. Mirrors the timeouts
 * PyTorch reports as {@code torch.distributed.DistBackendError} ({@code DistStoreError} for the store).
 */
public class DistributedTimeoutException extends DistributedException {
    public DistributedTimeoutException(String message) {
        super(message);
    }

    DistributedTimeoutException(String message, ErrorFacts facts, Throwable cause) {
        super(message, facts, cause);
    }

    /** How long the operation waited before it gave up; null when unknown. */
    public Duration timeout() {
        return facts().timeout();
    }

    /** The peer rank whose data or arrival was waited for; -1 when it waited for several or is unknown. */
    public int waitedForRank() {
        return facts().peerRank();
    }

    /**
     * Whether the connection to {@link #waitedForRank()} was losing packets when the wait ended
     * (TCP was retransmitting): a network problem between two hosts, not a rank that did not take part.
     */
    public boolean packetLoss() {
        return facts().packetLoss();
    }

    @Override
    DistributedException copy(String message, ErrorFacts facts) {
        return new DistributedTimeoutException(message, facts, this);
    }
}
