package org.ddp4j.internal;

/**
 * The positions in the long[] of {@link ProcessGroupNatives#flightRecord}: the same names and
 * numbers as native/src/comm/flight_record_layout.h (FlightRecordLayoutTest compares the two).
 */
public final class FlightRecordLayout {
    /** Longs ahead of the records. */
    public static final int HEADER = 5;
    /** Header: fields per record ({@link #FIELDS}). */
    public static final int HEADER_FIELDS = 0;
    /** Header: the ring's capacity; 0 when the recorder is off. */
    public static final int HEADER_CAPACITY = 1;
    /** Header: the highest collective number that started. */
    public static final int HEADER_LAST_STARTED = 2;
    /** Header: the steady clock now, in ns. */
    public static final int HEADER_STEADY_NOW = 3;
    /** Header: the wall clock now, in ns since the epoch. */
    public static final int HEADER_WALL_NOW = 4;

    /** Longs per record. */
    public static final int FIELDS = 14;
    public static final int RECORD_ID = 0;
    /** The collective number (a transfer's: its number in its sender-receiver-tag stream). */
    public static final int SEQ = 1;
    /** The fingerprint's kind: {@link #KIND_SEND}, {@link #KIND_RECV}, or a collective's. */
    public static final int KIND = 2;
    public static final int ARG = 3;
    public static final int DTYPE = 4;
    public static final int NUMEL = 5;
    public static final int BUCKET = 6;
    public static final int BUCKETS = 7;
    public static final int PEER = 8;
    /** An index of {@link #TRANSPORTS}. */
    public static final int TRANSPORT = 9;
    /** An index of {@link #STATES}. */
    public static final int STATE = 10;
    /** Steady-clock times in ns, 0 until reached. */
    public static final int QUEUED_NS = 11;
    public static final int STARTED_NS = 12;
    public static final int FINISHED_NS = 13;

    /** Fingerprint kinds (native/src/comm/fingerprint.h, Fingerprint::Kind). */
    public static final int KIND_ALL_REDUCE = 1;
    public static final int KIND_BROADCAST = 2;
    public static final int KIND_REDUCE = 5;
    public static final int KIND_REDUCE_SCATTER = 6;
    public static final int KIND_SEND = 7;
    public static final int KIND_RECV = 8;

    /** FlightState's names, by value (flight_recorder.h). */
    public static final String[] STATES = {"queued", "started", "completed", "failed"};
    public static final int STATE_STARTED = 1;
    public static final int STATE_COMPLETED = 2;

    /** FlightTransport's names, by value (flight_recorder.h). */
    public static final String[] TRANSPORTS = {"gloo", "shm", "shm+gloo", "nccl"};

    private FlightRecordLayout() {}

    /** Whether a record's kind is a point-to-point transfer (its number counts its own stream). */
    public static boolean isTransfer(long kind) {
        return kind == KIND_SEND || kind == KIND_RECV;
    }
}
