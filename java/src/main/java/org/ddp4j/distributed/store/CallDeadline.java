package org.ddp4j.distributed.store;

import java.net.Socket;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Bounds one blocking exchange on a socket: at the deadline the socket is closed, which ends a
 * read or a write stuck on a peer that stopped (a socket read timeout alone cannot end a write,
 * nor a read that a peer feeds a byte at a time). {@link #expired()} then tells the caller that
 * the failure it sees was the deadline.
 */
final class CallDeadline implements AutoCloseable {
    private static final ScheduledThreadPoolExecutor TIMER = timer();

    private final ScheduledFuture<?> task;
    private volatile boolean expired;

    private CallDeadline(Socket socket, long millis) {
        this.task = TIMER.schedule(() -> {
            expired = true;
            StoreSupport.closeQuietly(socket);
        }, millis, TimeUnit.MILLISECONDS);
    }

    /** Closes {@code socket} in {@code millis} ms unless {@link #close()} comes first. */
    static CallDeadline arm(Socket socket, long millis) {
        return new CallDeadline(socket, Math.max(1, millis));
    }

    /** Whether the deadline passed (and the socket was closed). */
    boolean expired() {
        return expired;
    }

    /** Disarms the deadline. */
    @Override
    public void close() {
        task.cancel(false);
    }

    private static ScheduledThreadPoolExecutor timer() {
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
            Thread th = new Thread(r, "ddp4j-tcpstore-deadlines");
            th.setDaemon(true);
            return th;
        });
        t.setRemoveOnCancelPolicy(true);
        return t;
    }
}
