package org.ddp4j.distributed;

/**
 * A peer rank went away during a collective: its process ended or its connection closed. The
 * group cannot be used again; destroy it (and usually the job: the launcher restarts the workers).
 * Mirrors what PyTorch reports as a {@code DistBackendError} with a closed connection.
 */
public class PeerLostException extends DistributedException {

    /** Why the peer went away, as far as this rank can tell. */
    public enum Reason {
        /** Its connection closed; whether it exited or was killed is not known (e.g. the store did not answer). */
        CLOSED,
        /** Its program ended (main returned, {@code System.exit}, SIGTERM) or it closed its process group. */
        EXITED,
        /** Its process ended without exiting: kill -9, the out-of-memory killer, or a crash. */
        KILLED
    }

    public PeerLostException(String message) {
        super(message);
    }

    PeerLostException(String message, ErrorFacts facts, Throwable cause) {
        super(message, facts, cause);
    }

    /** The lost peer's rank in the group; -1 when no rank could be named. */
    public int peerRank() {
        return facts().peerRank();
    }

    /** The lost peer's process id; 0 when unknown. */
    public long peerPid() {
        return facts().peerPid();
    }

    /** Why it went away. */
    public Reason reason() {
        return facts().reason();
    }

    /**
     * As {@link #explained(String, String)} with no prefix, for a caller that learned why the peer
     * went away (e.g. it left no exit mark: killed): the copy reports {@code reason}.
     */
    public PeerLostException explainedAs(Reason reason, String hint) {
        ErrorFacts f = facts();
        ErrorFacts known = new ErrorFacts(f.op(), f.transport(), f.rank(), f.peerRank(), f.peerPid(), reason,
                f.sequenceNumber(), f.timeoutMillis(), f.packetLoss(), f.localCall(), f.peerCall());
        return (PeerLostException) withFacts(known).explained(null, hint);
    }

    @Override
    DistributedException copy(String message, ErrorFacts facts) {
        return new PeerLostException(message, facts, this);
    }
}
