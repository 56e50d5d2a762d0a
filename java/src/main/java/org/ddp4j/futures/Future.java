package org.ddp4j.futures;

import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;
import org.ddp4j.distributed.Work;

/**
 * The eventual result of an asynchronous computation, as {@code torch.futures.Future}: what a DDP
 * communication hook returns for its bucket. {@link #value()} waits and returns the result (as
 * {@code Future.wait()}, which Java's {@code Object.wait} takes the name of, and
 * {@code Future.value()}); {@link #then} chains a callback, as {@code Future.then}.
 *
 * <p>Unlike PyTorch's, a callback runs on the thread that waits for it, when it first does, not on
 * whichever thread completed the parent: DDP waits for its buckets' futures in bucket order on the
 * training thread, so the collectives a callback issues (PowerSGD's second and third all-reduces)
 * come in the same order on every rank, as the process group requires. A future is evaluated at
 * most once; its result, or its exception, is kept and returned (thrown) by every later wait.
 * Waiting on a future made from a {@link Work} is bounded by the work's process group timeout.
 * Not thread-safe beyond that: one thread waits (the training thread).
 *
 * @param <T> the result type (for hooks: the reduced flat gradient, a float32 tensor)
 */
public final class Future<T> {
    private Supplier<T> compute;
    private boolean done;
    private T result;
    private RuntimeException error;

    private Future(Supplier<T> compute) {
        this.compute = compute;
    }

    /** A future that already holds {@code value}. Mirrors setting the result of a fresh {@code torch.futures.Future}. */
    public static <T> Future<T> completed(T value) {
        Future<T> f = new Future<>(null);
        f.done = true;
        f.result = value;
        return f;
    }

    /**
     * The future of a collective: completes with {@code value} (usually the collective's tensor)
     * once {@code work} has finished. Mirrors {@code work.get_future()}.
     */
    public static <T> Future<T> of(Work work, T value) {
        Objects.requireNonNull(work, "work");
        return new Future<>(() -> {
            work.await();
            return value;
        });
    }

    /** A future whose result {@code compute} produces when it is first waited for (on the waiting thread). */
    public static <T> Future<T> deferred(Supplier<T> compute) {
        return new Future<>(Objects.requireNonNull(compute, "compute"));
    }

    /**
     * Waits for the result and returns it. Mirrors {@code Future.wait()} / {@code Future.value()}.
     *
     * @throws RuntimeException what the computation threw (e.g. a {@code DistributedException} or
     *     {@code DistributedTimeoutException} of a collective), again at every call
     */
    public T value() {
        if (!done) {
            Supplier<T> c = compute;
            compute = null;
            try {
                result = c.get();
            } catch (RuntimeException e) {
                error = e;
            } finally {
                done = true;
            }
        }
        if (error != null) {
            throw error;
        }
        return result;
    }

    /** Whether the result (or failure) is already known; never blocks, runs no callback. Mirrors {@code Future.done()}. */
    public boolean isDone() {
        return done;
    }

    /**
     * A future of {@code callback} applied to this one once it has completed: the callback gets
     * this future (call {@link #value()} on it, which then returns at once or throws this one's
     * failure). Mirrors {@code Future.then(callback)}; see the class comment for where it runs.
     */
    public <U> Future<U> then(Function<Future<T>, U> callback) {
        Objects.requireNonNull(callback, "callback");
        return new Future<>(() -> {
            value();
            return callback.apply(this);
        });
    }

    @Override
    public String toString() {
        return done ? (error != null ? "Future(failed: " + error.getMessage() + ")" : "Future(done)") : "Future(pending)";
    }
}
