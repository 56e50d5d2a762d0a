package org.ddp4j.distributed;

import org.ddp4j.tensor.DType;

/**
 * One rank's collective call, as a {@link CollectiveMismatchException} reports it: what each rank
 * said it was running (the fingerprint the ranks compare before any data moves).
 *
 * @param kind which collective
 * @param sequenceNumber the group's collective number, from 1 (point to point: the number in that
 *     sender-receiver-tag stream); 0 when unknown
 * @param numel elements per rank (reduce-scatter: the input's)
 * @param dtype the tensors' element type, null when unknown
 * @param arg the reduce op's ordinal ({@link ReduceOp}) for reductions, the root rank for a
 *     broadcast, the tag for a send or recv, else 0
 * @param bucket DDP's bucket index (0-based) when the call is a DDP gradient bucket's all-reduce, else -1
 * @param buckets DDP's number of buckets (0 when not a DDP bucket)
 * @param peer reduce: the root; send: the destination; recv: the source; else 0
 * @param description the call in words, e.g. {@code allReduce(AVG) of 1,234 float32 elements (#57, DDP bucket 2 of 3)}
 */
public record CollectiveCall(Kind kind, long sequenceNumber, long numel, DType dtype, int arg, int bucket, int buckets,
        int peer, String description) implements java.io.Serializable {

    /** The collectives, in the native fingerprint's numbering (comm/fingerprint.h) from 1. */
    public enum Kind {
        /** Not known (a fingerprint of a newer or older ddp4j). */
        UNKNOWN,
        ALL_REDUCE,
        BROADCAST,
        ALL_GATHER,
        BARRIER,
        REDUCE,
        REDUCE_SCATTER,
        SEND,
        RECV;

        static Kind of(long code) {
            return code >= 1 && code < values().length ? values()[(int) code] : UNKNOWN;
        }
    }

    /** Whether this is a DDP gradient bucket's all-reduce. */
    public boolean isDdpBucket() {
        return bucket >= 0;
    }

    @Override
    public String toString() {
        return description;
    }
}
