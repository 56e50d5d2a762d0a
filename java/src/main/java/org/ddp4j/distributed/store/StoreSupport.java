package org.ddp4j.distributed.store;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;

/** Helpers shared by the {@link Store} implementations: argument checks, counters, deadlines, messages. */
final class StoreSupport {
    private StoreSupport() {}

    /** Checks a timeout given to a constructor: not null, not negative. */
    static Duration checkTimeout(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must not be negative, got " + timeout);
        }
        return timeout;
    }

    static String checkKey(String key) {
        return Objects.requireNonNull(key, "key");
    }

    static List<String> checkKeys(List<String> keys) {
        Objects.requireNonNull(keys, "keys");
        for (String k : keys) {
            Objects.requireNonNull(k, "keys contains null");
        }
        return keys;
    }

    /** Nanosecond deadline {@code timeout} from now, saturating instead of overflowing for huge timeouts. */
    static long deadlineNanos(Duration timeout) {
        long now = System.nanoTime();
        long nanos = toNanosSaturated(timeout);
        long deadline = now + nanos;
        return deadline - now < 0 ? now + Long.MAX_VALUE / 2 : deadline;
    }

    static long toNanosSaturated(Duration timeout) {
        if (timeout.isNegative()) {
            return 0;
        }
        try {
            return timeout.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 2;
        }
    }

    static long toMillisSaturated(Duration timeout) {
        if (timeout.isNegative()) {
            return 0;
        }
        try {
            return timeout.toMillis();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 4;
        }
    }

    /** a + b for non-negative values, saturating at Long.MAX_VALUE / 4. */
    static long saturatedAdd(long a, long b) {
        long sum = a + b;
        return sum < 0 || sum > Long.MAX_VALUE / 4 ? Long.MAX_VALUE / 4 : sum;
    }

    /** Parses a counter value (decimal ASCII, as PyTorch stores it). */
    static long parseCounter(String key, byte[] value, String where) {
        String s = new String(value, StandardCharsets.US_ASCII).trim();
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new DistributedException("add(\"" + key + "\") in " + where + ": the key holds a value that is not a"
                    + " decimal counter (" + value.length + " bytes); a key used with add() must only be set by add()");
        }
    }

    /** The new value of a counter after adding {@code delta}, checking for overflow. */
    static long addCounter(String key, byte[] old, long delta, String where) {
        long current = old == null ? 0 : parseCounter(key, old, where);
        try {
            return Math.addExact(current, delta);
        } catch (ArithmeticException e) {
            throw new DistributedException("add(\"" + key + "\", " + delta + ") in " + where
                    + " overflows the 64-bit counter (current value " + current + ")");
        }
    }

    static byte[] encodeCounter(long value) {
        return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
    }

    static String formatDuration(Duration d) {
        long ms = toMillisSaturated(d);
        if (ms < 10_000) {
            return ms + " ms";
        }
        return String.format(java.util.Locale.ROOT, "%.1f s", ms / 1000.0);
    }

    /** The message of a {@link DistributedTimeoutException}: how long, which keys, in which store. */
    static String timeoutMessage(Duration timeout, List<String> missing, String where) {
        return "Timed out after " + formatDuration(timeout) + " waiting for "
                + (missing.size() == 1 ? "key " : "keys ") + quote(missing) + " in " + where
                + ": the processes that should set " + (missing.size() == 1 ? "it" : "them")
                + " may have failed, not started, or use a different store";
    }

    static String quote(List<String> keys) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < keys.size(); i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append('"').append(keys.get(i)).append('"');
        }
        return sb.append(']').toString();
    }

    /** Closes c (if not null), ignoring errors: for sockets and streams being torn down anyway. */
    static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception ignored) {
            // closing anyway
        }
    }
}
