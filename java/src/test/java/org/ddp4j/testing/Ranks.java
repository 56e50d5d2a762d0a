package org.ddp4j.testing;

import static org.junit.jupiter.api.Assertions.fail;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.ddp4j.distributed.GlooOnlyGroups;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;

/** Runs ranks as threads of this JVM, each with its own group, and collects what each returned or threw. */
public final class Ranks {
    /** Longest a multi-rank test may take before it is declared hung. */
    public static final Duration HANG_LIMIT = Duration.ofSeconds(30);

    public interface Body<T> {
        T run(int rank) throws Exception;
    }

    public interface GroupBody<T> {
        T run(int rank, ProcessGroup group) throws Exception;
    }

    /** What one rank's thread returned or threw. */
    public record Outcome<T>(T value, Throwable error) {}

    private Ranks() {}

    /** Runs body on {@code world} threads; fails the test if any thread is still running after {@link #HANG_LIMIT}. */
    public static <T> List<Outcome<T>> collect(int world, Body<T> body) throws InterruptedException {
        return collect(world, HANG_LIMIT, body);
    }

    /**
     * Runs body on {@code world} threads and waits at most {@code limit} for all of them. A rank
     * still running then fails the test with a message naming it and where it is stuck (and what
     * the finished ranks threw, often the cause); it is interrupted so it does not outlive the test.
     */
    public static <T> List<Outcome<T>> collect(int world, Duration limit, Body<T> body) throws InterruptedException {
        AtomicReferenceArray<Outcome<T>> outcomes = new AtomicReferenceArray<>(world);
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            final int rank = r;
            Thread t = new Thread(() -> {
                try {
                    outcomes.set(rank, new Outcome<>(body.run(rank), null));
                } catch (Throwable e) {
                    outcomes.set(rank, new Outcome<>(null, e));
                }
            }, "rank-" + r);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        long deadline = System.nanoTime() + limit.toNanos();
        for (Thread t : threads) {
            t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
        }
        StringBuilder hung = new StringBuilder();
        for (int r = 0; r < world; r++) {
            Thread t = threads.get(r);
            if (t.isAlive()) {
                hung.append("\nrank ").append(r).append(" is still running after ").append(limit.toMillis())
                        .append(" ms (a collective or rendezvous hung); it is at:");
                StackTraceElement[] stack = t.getStackTrace();
                for (StackTraceElement frame : Arrays.copyOf(stack, Math.min(8, stack.length))) {
                    hung.append("\n    at ").append(frame);
                }
            }
        }
        if (hung.length() > 0) {
            for (int r = 0; r < world; r++) {
                Outcome<T> o = outcomes.get(r);
                if (o != null && o.error() != null) {
                    hung.append("\nrank ").append(r).append(" failed: ").append(o.error());
                }
            }
            threads.forEach(Thread::interrupt);
            fail(hung.substring(1));
        }
        List<Outcome<T>> out = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            out.add(outcomes.get(r));
        }
        return out;
    }

    /** Like {@link #collect} but rethrows the first rank's error; returns each rank's value. */
    public static <T> List<T> run(int world, Body<T> body) throws Exception {
        List<Outcome<T>> outcomes = collect(world, body);
        List<T> values = new ArrayList<>();
        Exception first = null;
        for (int r = 0; r < world; r++) {
            Outcome<T> o = outcomes.get(r);
            if (o.error() != null) {
                Exception e = new Exception("rank " + r + " failed: " + o.error(), o.error());
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
            values.add(o.value());
        }
        if (first != null) {
            throw first;
        }
        return values;
    }

    /** Each rank joins a Gloo group on 127.0.0.1 through one shared HashStore, runs body, and closes the group. */
    public static <T> List<T> withGroups(int world, Duration timeout, GroupBody<T> body) throws Exception {
        HashStore store = new HashStore(Duration.ofSeconds(20));
        return run(world, rank -> {
            try (ProcessGroupGloo group = new ProcessGroupGloo(store, rank, world, timeout, "127.0.0.1")) {
                return body.run(rank, group);
            }
        });
    }

    /**
     * A group on Gloo's TCP transport only (shared memory off), for tests of Gloo's own failure
     * behaviour: a thread-rank that closes its group does not exit, so shared memory sees no dead
     * peer and waits for the timeout, and small shared-memory ops complete on the calling thread.
     */
    public static ProcessGroupGloo glooOnly(HashStore store, int rank, int world, Duration timeout) {
        return GlooOnlyGroups.create(store, rank, world, timeout);
    }

    /** {@link #withGroups} on Gloo's TCP transport only (see {@link #glooOnly}). */
    public static <T> List<T> withGlooGroups(int world, Duration timeout, GroupBody<T> body) throws Exception {
        HashStore store = new HashStore(Duration.ofSeconds(20));
        return run(world, rank -> {
            try (ProcessGroupGloo group = glooOnly(store, rank, world, timeout)) {
                return body.run(rank, group);
            }
        });
    }
}
