package org.ddp4j.distributed;

import java.lang.ref.Cleaner;
import java.time.Duration;
import org.ddp4j.internal.WorkNatives;

/**
 * The {@link Work} of every native backend (Gloo and NCCL): one handle on a native
 * {@code ddp4j::Work}, whose virtual functions carry the backend's behaviour. {@link #await()} is the
 * native {@code synchronize}: for Gloo it blocks the host until the collective finished; for NCCL it
 * orders the device's compute stream after the collective without blocking the host (a barrier
 * blocks). {@link #await(Duration)} and {@link #awaitBlocking()} block the host for both.
 *
 * <p>The handle is freed as soon as completion has been observed (the outcome is then kept in
 * Java and rethrown by every later await), or by a {@link Cleaner} if the Work is dropped
 * unobserved. A wait's own timeout is never recorded as the collective's outcome. The first
 * failure observed (a collective that failed or timed out) also has {@link FlightRecorderMonitor}
 * write this rank's flight-recorder dump before the error reaches the caller. The NCCL side
 * keeps the tensors alive until the GPU is past them, whenever the handle is freed.
 */
final class NativeWork extends Work {
    private static final Cleaner CLEANER = Cleaner.create();

    /** The native handle and the observed outcome; also the lock. Reachable from the cleaner, so it must not refer to the Work. */
    private static final class State implements Runnable {
        long handle;
        int users; // threads inside a native call with the handle
        boolean done;
        DistributedException error;
        String description; // fetched from the native side when toString first needs it

        State(long handle) {
            this.handle = handle;
        }

        @Override
        public synchronized void run() {
            if (handle != 0 && users == 0) {
                WorkNatives.free(handle);
                handle = 0;
            }
        }
    }

    /** A native wait on the work handle. */
    private interface NativeWait {
        /** Returns whether the work has finished (successfully: a failure throws). */
        boolean run(long handle);
    }

    private final State state;
    /** The operation's name, for toString once the handle is gone (the native description says more). */
    private final String op;

    /** Takes ownership of a native work handle from {@code ProcessGroupNatives}; {@code op} names the collective. */
    NativeWork(long handle, String op) {
        this.op = op;
        state = new State(handle);
        CLEANER.register(this, state);
    }

    @Override
    public void await() {
        call(WorkNatives::synchronize);
    }

    @Override
    public void await(Duration timeout) {
        long timeoutMs = timeout == null || timeout.isNegative() || timeout.isZero() ? 0 : NativeProcessGroup.millis(timeout);
        call(h -> {
            WorkNatives.await(h, timeoutMs);
            return true;
        });
    }

    /**
     * Runs a native wait with the handle held. A wait that reports the work finished is one native
     * call; only a wait that threw asks the native side whether the work has finished, and then for
     * the work's own outcome.
     */
    private void call(NativeWait wait) {
        long handle;
        synchronized (state) {
            if (state.done) {
                rethrow();
                return;
            }
            handle = state.handle;
            state.users++;
        }
        boolean finished = false;
        boolean threw = true;
        DistributedException failed = null;
        try {
            finished = wait.run(handle);
            threw = false;
        } finally {
            synchronized (state) {
                state.users--;
                if (!state.done) {
                    if (finished) {
                        state.done = true;
                    } else if (threw && WorkNatives.isCompleted(handle)) {
                        // The work's own outcome, read once it has finished; never the wait's: a wait
                        // that timed out just before the collective finished is not its result.
                        recordOutcome(handle);
                        failed = state.error;
                    }
                }
                if (state.done) {
                    state.run(); // frees the handle once no other thread is inside a native call with it
                }
            }
            if (failed != null) {
                FlightRecorderMonitor.onFailure(failed); // before the caller (and maybe the process) goes on
            }
        }
    }

    /** With the lock held and the work finished: its error, if any, from the native side. */
    private void recordOutcome(long handle) {
        try {
            WorkNatives.await(handle, 0); // finished: returns at once or throws its error
            state.error = null;
        } catch (DistributedException e) {
            state.error = e;
        }
        state.done = true;
    }

    @Override
    public boolean isCompleted() {
        DistributedException failed;
        synchronized (state) {
            if (state.done) {
                return true;
            }
            if (!WorkNatives.isCompleted(state.handle)) {
                return false;
            }
            recordOutcome(state.handle);
            failed = state.error;
            state.run();
        }
        if (failed != null) {
            FlightRecorderMonitor.onFailure(failed);
        }
        return true;
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

    /**
     * "Work(allReduce(SUM) of 10 float32 elements)" and the like while the handle lives; once it is
     * gone, unasked, only the operation's name: "Work(allReduce, done)".
     */
    @Override
    public String toString() {
        synchronized (state) {
            if (state.description == null && state.handle != 0) {
                try {
                    state.description = WorkNatives.description(state.handle);
                } catch (RuntimeException ignored) {
                    // toString must not throw
                }
            }
            String description = state.description != null ? state.description : op;
            return "Work(" + description + (state.done ? (state.error == null ? ", done" : ", failed") : "") + ")";
        }
    }
}
