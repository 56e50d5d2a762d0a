package org.ddp4j.distributed.store;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs the connections a {@link TcpStoreServer} refuses or drops (SLF4J warn, with the peer's
 * address), at most one line a second per server so that a flood cannot flood the log too; the
 * lines held back are counted in the next one. The latest reasons are kept for diagnostics.
 */
final class RefusalLog {
    private static final Logger LOG = LoggerFactory.getLogger(TcpStoreServer.class);
    private static final long INTERVAL_NANOS = 1_000_000_000L;
    private static final int KEEP = 64;

    private final String where;
    private final Deque<String> recent = new ArrayDeque<>();
    private long lastLogNanos;
    private boolean loggedOnce;
    private int suppressed;

    RefusalLog(String where) {
        this.where = where;
    }

    /** Records and (rate permitting) logs "{where}: {what} {peer}: {reason}". */
    void refused(String what, Object peer, String reason) {
        String line = where + ": " + what + " " + peer + ": " + reason;
        int held;
        synchronized (this) {
            recent.addLast(line);
            if (recent.size() > KEEP) {
                recent.removeFirst();
            }
            long now = System.nanoTime();
            if (loggedOnce && now - lastLogNanos < INTERVAL_NANOS) {
                suppressed++;
                return;
            }
            loggedOnce = true;
            lastLogNanos = now;
            held = suppressed;
            suppressed = 0;
        }
        if (held > 0) {
            LOG.warn("{} ({} similar lines held back in the last second)", line, held);
        } else {
            LOG.warn(line);
        }
    }

    /** The latest refusals, oldest first. */
    synchronized List<String> recent() {
        return new ArrayList<>(recent);
    }
}
