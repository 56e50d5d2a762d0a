package org.ddp4j.distributed;

import java.time.Duration;

/**
 * What a distributed failure knows beside its message, as the native side found it
 * (native/include/ddp4j/errors.h, ErrorFacts): the fields behind the accessors of
 * {@link DistributedException} and its subclasses. Unknown numbers are -1 (ranks, the timeout) or 0.
 */
record ErrorFacts(String op, String transport, int rank, int peerRank, long peerPid, PeerLostException.Reason reason,
        long sequenceNumber, long timeoutMillis, boolean packetLoss, CollectiveCall localCall, CollectiveCall peerCall)
        implements java.io.Serializable {

    /** No facts: an exception made from a message alone. */
    static final ErrorFacts NONE = new ErrorFacts(null, null, -1, -1, 0, PeerLostException.Reason.CLOSED, 0, -1, false,
            null, null);

    Duration timeout() {
        return timeoutMillis < 0 ? null : Duration.ofMillis(timeoutMillis);
    }
}
