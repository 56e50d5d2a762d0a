package org.ddp4j.launch;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;
import org.ddp4j.distributed.store.Store;

/**
 * A {@link Store} whose every call returns within a deadline: the launcher's view of the job's
 * store. Each call runs on one daemon thread of this instance; the caller waits at most
 * {@code deadline} (plus the call's own wait, for {@link #waitFor} and {@link #get}) and then gets a
 * {@link DistributedTimeoutException}, so a store that stopped answering (a partition, a stopped
 * master) can never stall the launcher.
 *
 * <p>A call that overran is left to finish in the background rather than cut off: closing the
 * connection would also stop the server on node 0, whose launcher may only have been paused. Calls
 * made meanwhile queue behind it and time out in turn (and, having timed out before they started,
 * never run). Time this process itself spent stopped
 * (SIGSTOP, a long GC) is not counted against the store.
 */
final class DeadlineStore implements Store {

    /** The longest single wait; a gap far beyond it means this process itself was not running. */
    private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    /** The most one wake-up counts: beyond it this process was stopped, not the store slow. */
    private static final long MAX_COUNTED_GAP_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final Store delegate;
    private final Duration deadline;
    private final String where;
    private final ExecutorService caller;

    /**
     * @param delegate the store to call (a {@code TcpStore}, possibly behind a {@code PrefixStore})
     * @param deadline how long a call may take beyond its own wait before the store counts as unreachable
     * @param where the store's address for messages, e.g. {@code 10.77.0.1:29500}
     */
    DeadlineStore(Store delegate, Duration deadline, String where) {
        this.delegate = delegate;
        this.deadline = deadline;
        this.where = where;
        this.caller = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "ddp4j-run-store-call");
            t.setDaemon(true);
            return t;
        });
    }

    @Override
    public void set(String key, byte[] value) {
        call("set(" + key + ")", Duration.ZERO, () -> {
            delegate.set(key, value);
            return null;
        });
    }

    @Override
    public byte[] get(String key) {
        return call("get(" + key + ")", delegate.timeout(), () -> delegate.get(key));
    }

    @Override
    public long add(String key, long delta) {
        return call("add(" + key + ")", Duration.ZERO, () -> delegate.add(key, delta));
    }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        return call("compareSet(" + key + ")", Duration.ZERO, () -> delegate.compareSet(key, expected, desired));
    }

    @Override
    public void waitFor(List<String> keys, Duration timeout) {
        call("wait" + keys, timeout, () -> {
            delegate.waitFor(keys, timeout);
            return null;
        });
    }

    @Override
    public boolean check(List<String> keys) {
        return call("check" + keys, Duration.ZERO, () -> delegate.check(keys));
    }

    @Override
    public boolean deleteKey(String key) {
        return call("deleteKey(" + key + ")", Duration.ZERO, () -> delegate.deleteKey(key));
    }

    @Override
    public byte[] claimWhileConnected(String key, byte[] value) {
        return call("claimWhileConnected(" + key + ")", Duration.ZERO, () -> delegate.claimWhileConnected(key, value));
    }

    @Override
    public Duration timeout() {
        return delegate.timeout();
    }

    /** Closes the underlying store at once (a call in progress fails) and stops the call thread. */
    @Override
    public void close() {
        try {
            delegate.close();
        } catch (Exception e) {
            throw new DistributedException("closing the store at " + where + ": " + e, e);
        } finally {
            caller.shutdownNow();
        }
    }

    private <T> T call(String what, Duration ownWait, Callable<T> body) {
        Future<T> f;
        try {
            f = caller.submit(body);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            throw new DistributedException("the launcher's connection to the store at " + where + " is closed; cannot " + what);
        }
        long budget = ownWait.plus(deadline).toNanos();
        long waited = 0;
        long last = System.nanoTime();
        while (true) {
            try {
                return f.get(Math.min(SLICE_NANOS, Math.max(1, budget - waited)), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                long now = System.nanoTime();
                // Count at most 2 s per wake-up: a longer gap is this process having been stopped.
                waited += Math.min(now - last, MAX_COUNTED_GAP_NANOS);
                last = now;
                if (waited >= budget) {
                    f.cancel(false); // a call still queued never runs; one under way is left to finish
                    throw new DistributedTimeoutException("the store at " + where + " did not answer " + what
                            + " within " + KeepAlive.seconds(Duration.ofNanos(budget)) + " s");
                }
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof RuntimeException re) {
                    throw re;
                }
                throw new DistributedException("store call " + what + " at " + where + " failed: " + cause, cause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DistributedException("interrupted while calling " + what + " on the store at " + where);
            }
        }
    }
}
