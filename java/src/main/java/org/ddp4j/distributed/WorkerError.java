package org.ddp4j.distributed;

import java.util.List;

/**
 * One worker's failure as its error file records it ({@link ErrorFile}): what the launcher reads
 * to choose a job's root cause instead of scraping the worker's stderr.
 *
 * @param version the file format's version ({@link ErrorFile#FORMAT_VERSION})
 * @param type the exception's class name, e.g. {@code org.ddp4j.distributed.PeerLostException}
 * @param message the exception's message (may be empty)
 * @param fromPeer whether the failure came from a peer: a {@code DistributedException} (a lost or
 *     mismatched peer, a timeout) is this worker's or a cause's exception; a worker that failed on
 *     its own (a bad file, its own bug) is a root cause, one that failed from a peer is a consequence
 * @param peerRank the peer rank the failure names (lost, waited for, mismatched), -1 when none
 * @param timeout whether the failure is a timeout ({@code DistributedTimeoutException})
 * @param op the operation that failed, in words, or null
 * @param timeoutMillis how long it waited, -1 when not a timeout or unknown
 * @param packetLoss whether the connection to {@code peerRank} was losing packets
 * @param stack the exception's stack trace, one frame a line, causes included
 * @param timestampMillis when it was recorded (epoch milliseconds)
 * @param rank the worker's global rank ({@code RANK}), -1 when unknown
 * @param pid the worker's process id
 */
public record WorkerError(int version, String type, String message, boolean fromPeer, int peerRank, boolean timeout,
        String op, long timeoutMillis, boolean packetLoss, List<String> stack, long timestampMillis, int rank,
        long pid) {

    /** The failure in one line: {@code PeerLostException: allReduce(SUM) ... failed ...}. */
    public String summary() {
        String simple = type.substring(type.lastIndexOf('.') + 1);
        return message == null || message.isEmpty() ? simple : simple + ": " + message;
    }
}
