package org.ddp4j.distributed;

import org.ddp4j.internal.Setting;
import org.ddp4j.tensor.DType;

/**
 * Makes the Java exception of a native distributed error from its kind, message and facts: the one
 * place the native side's error kinds become exception classes (called by jni_util.cpp's
 * throw_java). The facts arrive as numbers and texts in the layout below, which jni_util.cpp writes.
 */
final class NativeErrors {

    // ddp4j::ErrorKind's values (native/include/ddp4j/errors.h).
    static final int DISTRIBUTED = 2;
    static final int TIMEOUT = 3;
    static final int MISMATCH = 6;
    static final int PEER_LOST = 7;

    // The numbers: rank, peer, peer pid, loss, seq, timeout ms, packet loss, then two calls of CALL_LONGS.
    private static final int CALLS_AT = 7;
    private static final int CALL_LONGS = 9;
    // The texts: op, transport, this rank's call, the peer's call.

    /**
     * The test-only switch that replaces every native message by {@link #NEUTRAL_MESSAGE}: with it,
     * tests show that no verdict depends on the messages' words.
     */
    static final String NEUTRAL_MESSAGES_ENV = Setting.TEST_NEUTRAL_MESSAGES.variable();
    static final String NEUTRAL_MESSAGE = "(native message withheld by " + NEUTRAL_MESSAGES_ENV + ")";

    private NativeErrors() {}

    static Throwable create(int kind, String message, long[] numbers, String[] texts) {
        if ("1".equals(System.getenv(NEUTRAL_MESSAGES_ENV))) {
            message = NEUTRAL_MESSAGE;
        }
        ErrorFacts facts = new ErrorFacts(blankToNull(texts[0]), blankToNull(texts[1]), (int) numbers[0],
                (int) numbers[1], numbers[2], reason(numbers[3]), numbers[4], numbers[5], numbers[6] != 0,
                call(numbers, CALLS_AT, texts[2]), call(numbers, CALLS_AT + CALL_LONGS, texts[3]));
        return switch (kind) {
            case TIMEOUT -> new DistributedTimeoutException(message, facts, null);
            case MISMATCH -> mismatch(message, facts);
            case PEER_LOST -> new PeerLostException(message, facts, null);
            default -> "store".equals(facts.transport()) ? new StoreException(message, facts, null)
                    : new DistributedException(message, facts, null);
        };
    }

    /** A mismatch; one with a DDP bucket on either side suggests join(), whoever made the other call. */
    private static CollectiveMismatchException mismatch(String message, ErrorFacts facts) {
        CollectiveMismatchException e = new CollectiveMismatchException(message, facts, null);
        return e.involvesDdpBucket()
                ? (CollectiveMismatchException) e.explained(null, CollectiveMismatchException.UNEVEN_INPUTS_HINT) : e;
    }

    private static PeerLostException.Reason reason(long code) {
        PeerLostException.Reason[] all = PeerLostException.Reason.values();
        return code >= 0 && code < all.length ? all[(int) code] : PeerLostException.Reason.CLOSED;
    }

    private static CollectiveCall call(long[] n, int at, String text) {
        if (n[at] == 0) {
            return null;
        }
        DType[] dtypes = DType.values();
        DType dtype = n[at + 5] >= 0 && n[at + 5] < dtypes.length ? dtypes[(int) n[at + 5]] : null;
        return new CollectiveCall(CollectiveCall.Kind.of(n[at + 3]), n[at + 1], n[at + 2], dtype, (int) n[at + 4],
                (int) n[at + 6], (int) n[at + 7], (int) n[at + 8], text);
    }

    private static String blankToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }
}
