package org.ddp4j.distributed;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.function.LongConsumer;

/**
 * A {@link Work} backed by a native work handle (Gloo's or NCCL's). The handle is freed as soon as
 * completion has been observed (the outcome is then kept in Java), or by a {@link Cleaner} if the
 * Work is dropped unobserved. Subclasses supply the backend's natives.
 */
abstract class NativeWork extends Work {
    private static final Cleaner CLEANER = Cleaner.create();

    /** The native handle and the observed outcome; also the lock. Reachable from the cleaner, so it must not refer to the Work. */
    private static final class State implements Runnable {
        final LongConsumer free;
        long handle;
        int users; // threads inside a native call with the handle
        boolean done;
        DistributedException error;
        String description = "collective";

        State(long handle, LongConsumer free) {
            this.handle = handle;
            this.free = free;
        }

        @Override
        public synchronized void run() {
            if (handle != 0 && users == 0) {
                free.accept(handle);
                handle = 0;
            }
        }
    }

    /** A native call on the work handle. */
    interface NativeCall {
        void run(long handle);
    }

    private final State state;

    /** @param free the backend's workFree (a static method: the cleaner must not reach the Work) */
    NativeWork(long handle, LongConsumer free) {
        state = new State(handle, free);
        try {
            state.description = describe(handle);
        } catch (RuntimeException ignored) {
            // only used in toString
        }
        CLEANER.register(this, state);
    }

    /** The native op's description. */
    abstract String describe(long handle);

    /** Blocks the host until the work finished (timeoutMs 0: no limit), then throws its error if it failed. */
    abstract void nativeWait(long handle, long timeoutMs);

    /** Whether the work has finished; never blocks. */
    abstract boolean nativeIsCompleted(long handle);

    @Override
    public void await(Duration timeout) {
        long timeoutMs = timeout == null || timeout.isNegative() || timeout.isZero() ? 0 : NativeProcessGroup.millis(timeout);
        call(h -> nativeWait(h, timeoutMs), true);
    }

    /**
     * Runs a native wait with the handle held; records the outcome when the work turns out to have
     * finished (always after a blocking wait that returned normally when {@code finishesOnReturn}).
     */
    final void call(NativeCall wait, boolean finishesOnReturn) {
        long handle;
        synchronized (state) {
            if (state.done) {
                rethrow();
                return;
            }
            handle = state.handle;
            state.users++;
        }
        DistributedException thrown = null;
        boolean returned = false;
        try {
            wait.run(handle);
            returned = true;
        } catch (DistributedException e) {
            thrown = e;
        } finally {
            synchronized (state) {
                state.users--;
                // The work's own outcome, read from the native side once it has finished; never the
                // wait's: a wait that timed out just before the collective finished is not its result.
                if (!state.done && ((returned && finishesOnReturn) || nativeIsCompleted(handle))) {
                    recordOutcome(handle);
                }
                if (state.done) {
                    state.run(); // frees the handle once no other thread is inside a native call with it
                }
            }
        }
        if (thrown != null) {
            throw thrown;
        }
    }

    /** With the lock held and the work finished: its error, if any, from the native side. */
    private void recordOutcome(long handle) {
        try {
            nativeWait(handle, 0); // finished: returns at once or throws its error
            state.error = null;
        } catch (DistributedException e) {
            state.error = e;
        }
        state.done = true;
    }

    @Override
    public boolean isCompleted() {
        synchronized (state) {
            if (state.done) {
                return true;
            }
            if (!nativeIsCompleted(state.handle)) {
                return false;
            }
            recordOutcome(state.handle);
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

    @Override
    public String toString() {
        synchronized (state) {
            return "Work(" + state.description + (state.done ? (state.error == null ? ", done" : ", failed") : "") + ")";
        }
    }
}
