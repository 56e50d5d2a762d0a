package org.ddp4j.distributed;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.internal.NativeStore;

/**
 * The group's store as a Gloo group's native side calls it after a peer was lost in a collective
 * (native/src/comm/gloo/peer_loss.h: the rank that failed first records which rank died, before it
 * closes its connections, so that every survivor names the dead rank rather than a survivor that
 * closed). Each call gives up after {@link #CALL_WAIT}: a dead or hung store must not hold up a
 * failing rank; the error then names the peer whose connection closed, as without records.
 */
final class LostPeerRecords implements NativeStore {
    /** How long one store call may take; a live store answers in milliseconds. */
    static final Duration CALL_WAIT = Duration.ofSeconds(2);

    private static final ExecutorService CALLS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "ddp4j-lost-peer-records");
        t.setDaemon(true);
        return t;
    });

    private final Store store;

    LostPeerRecords(Store store) {
        this.store = store;
    }

    @Override
    public void set(String key, byte[] value) {
        bounded("set", () -> {
            store.set(key, value);
            return null;
        });
    }

    @Override
    public byte[] get(String key) {
        return bounded("get", () -> store.get(key));
    }

    @Override
    public void waitFor(String[] keys) {
        waitFor(keys, CALL_WAIT.toMillis());
    }

    @Override
    public void waitFor(String[] keys, long timeoutMs) {
        bounded("waitFor", () -> {
            store.waitFor(Arrays.asList(keys), Duration.ofMillis(timeoutMs));
            return null;
        });
    }

    /**
     * Runs {@code call}, rethrowing its exception (a DistributedTimeoutException means a missing key);
     * one that does not end in time fails with a DistributedException (not a timeout: the store, not the key).
     */
    private static <T> T bounded(String what, java.util.concurrent.Callable<T> call) {
        Future<T> f = CALLS.submit(call);
        try {
            return f.get(CALL_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new DistributedException("Store." + what + " did not answer within " + CALL_WAIT.toSeconds() + " s");
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new DistributedException("Store." + what + " failed: " + e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            f.cancel(true);
            throw new DistributedException("Store." + what + " interrupted");
        }
    }
}
