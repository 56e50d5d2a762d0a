package org.ddp4j.distributed;

import java.lang.ref.Cleaner;
import java.time.Duration;
import org.ddp4j.internal.GlooNatives;

/**
 * A {@link Work} backed by a native work handle of the Gloo backend. The handle is freed as soon
 * as completion has been observed (the outcome is kept in Java), or by a {@link Cleaner} if the
 * Work is dropped unobserved.
 */
final class GlooWork extends Work {
    private static final Cleaner CLEANER = Cleaner.create();

    /** The native handle and the observed outcome; also the lock. Reachable from the cleaner, so it must not refer to the Work. */
    private static final class State implements Runnable {
        long handle;
        int waiters; // threads inside workWait with the handle
        boolean done;
        DistributedException error;
        String description = "collective";

        @Override
        public synchronized void run() {
            if (handle != 0 && waiters == 0) {
                GlooNatives.workFree(handle);
                handle = 0;
            }
        }
    }

    private final State state = new State();

    GlooWork(long handle) {
        state.handle = handle;
        try {
            state.description = GlooNatives.workDescription(handle);
        } catch (RuntimeException ignored) {
            // only used in toString
        }
        CLEANER.register(this, state);
    }

    @Override
    public void await() {
        await(Duration.ZERO);
    }

    @Override
    public void await(Duration timeout) {
        long timeoutMs = timeout == null || timeout.isNegative() || timeout.isZero() ? 0 : toMillis(timeout);
        long handle;
        synchronized (state) {
            if (state.done) {
                rethrow();
                return;
            }
            handle = state.handle;
            state.waiters++;
        }
        DistributedException thrown = null;
        boolean finished = false;
        try {
            GlooNatives.workWait(handle, timeoutMs);
            finished = true;
        } catch (DistributedException e) {
            thrown = e;
        } finally {
            synchronized (state) {
                state.waiters--;
                if (!state.done && (finished || GlooNatives.workIsCompleted(handle))) {
                    state.done = true;
                    state.error = finished ? null : thrown;
                }
                if (state.done) {
                    state.run(); // frees the handle once no other thread is waiting on it
                }
            }
        }
        if (thrown != null) {
            throw thrown;
        }
    }

    @Override
    public boolean isCompleted() {
        synchronized (state) {
            if (state.done) {
                return true;
            }
            if (!GlooNatives.workIsCompleted(state.handle)) {
                return false;
            }
            try {
                GlooNatives.workWait(state.handle, 0); // finished: returns at once or throws its error
                state.error = null;
            } catch (DistributedException e) {
                state.error = e;
            }
            state.done = true;
            state.run();
            return true;
        }
    }

    /** Throws the recorded error again (a fresh exception of the same type, with the first as its cause). */
    private void rethrow() {
        DistributedException e = state.error;
        if (e == null) {
            return;
        }
        if (e instanceof DistributedTimeoutException) {
            DistributedTimeoutException again = new DistributedTimeoutException(e.getMessage());
            again.initCause(e);
            throw again;
        }
        throw new DistributedException(e.getMessage(), e);
    }

    private static long toMillis(Duration d) {
        try {
            return Math.max(1, d.toMillis());
        } catch (ArithmeticException overflow) {
            return Long.MAX_VALUE;
        }
    }

    @Override
    public String toString() {
        synchronized (state) {
            return "Work(" + state.description + (state.done ? (state.error == null ? ", done" : ", failed") : "") + ")";
        }
    }
}
