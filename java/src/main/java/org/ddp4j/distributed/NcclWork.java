package org.ddp4j.distributed;

import java.lang.ref.Cleaner;
import java.time.Duration;
import org.ddp4j.internal.NcclNatives;

/**
 * A {@link Work} of the NCCL backend. {@link #await()} orders the GPU's compute stream after the
 * collective without blocking the host (as PyTorch's {@code work.wait()} for NCCL);
 * {@link #await(Duration)} and {@link #awaitBlocking()} block the host until the collective has
 * finished on the GPU. The native handle is freed once completion has been observed, or by a
 * {@link Cleaner} if the Work is dropped (the native side keeps the tensors alive until the GPU is
 * done either way).
 */
final class NcclWork extends Work {
    private static final Cleaner CLEANER = Cleaner.create();

    /** The native handle and the observed outcome; also the lock. Must not refer to the Work. */
    private static final class State implements Runnable {
        long handle;
        int users; // threads inside a native call with the handle
        boolean done;
        DistributedException error;
        String description = "NCCL collective";

        @Override
        public synchronized void run() {
            if (handle != 0 && users == 0) {
                NcclNatives.workFree(handle);
                handle = 0;
            }
        }
    }

    private interface NativeCall {
        void run(long handle);
    }

    private final State state = new State();

    NcclWork(long handle) {
        state.handle = handle;
        try {
            state.description = NcclNatives.workDescription(handle);
        } catch (RuntimeException ignored) {
            // only used in toString
        }
        CLEANER.register(this, state);
    }

    @Override
    public void await() {
        call(NcclNatives::workSynchronize, false);
    }

    @Override
    public void await(Duration timeout) {
        long timeoutMs = timeout == null || timeout.isNegative() || timeout.isZero() ? 0 : toMillis(timeout);
        call(h -> NcclNatives.workWait(h, timeoutMs), true);
    }

    /**
     * Runs a native wait with the handle held; records the outcome when the work turns out to have
     * finished (always after a blocking wait that returned normally).
     */
    private void call(NativeCall wait, boolean finishesOnReturn) {
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
                if (!state.done && ((returned && finishesOnReturn) || NcclNatives.workIsCompleted(handle))) {
                    recordOutcome(handle);
                }
                if (state.done) {
                    state.run();
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
            NcclNatives.workWait(handle, 0); // finished: returns at once or throws its error
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
            if (!NcclNatives.workIsCompleted(state.handle)) {
                return false;
            }
            recordOutcome(state.handle);
            state.run();
            return true;
        }
    }

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
