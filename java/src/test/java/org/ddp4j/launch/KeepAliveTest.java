package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.distributed.store.Store;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link KeepAlive} on an in-process store, with a short interval (50 ms) and timeout (600 ms). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class KeepAliveTest {

    private static final Duration INTERVAL = Duration.ofMillis(50);
    private static final Duration TIMEOUT = Duration.ofMillis(600);
    private static final String ENDPOINT = "10.77.0.1:29500";

    /** A connection to a shared store: closing it leaves the store up; {@code down} makes it unreachable. */
    private static Store connection(Store shared, AtomicBoolean down) {
        return new Store() {
            private Store up() {
                if (down.get()) {
                    throw new DistributedException("connection refused (test)");
                }
                return shared;
            }

            @Override public void set(String key, byte[] value) { up().set(key, value); }
            @Override public byte[] get(String key) { return up().get(key); }
            @Override public long add(String key, long delta) { return up().add(key, delta); }
            @Override public byte[] compareSet(String key, byte[] e, byte[] d) { return up().compareSet(key, e, d); }
            @Override public void waitFor(List<String> keys, Duration timeout) { up().waitFor(keys, timeout); }
            @Override public boolean check(List<String> keys) { return up().check(keys); }
            @Override public boolean deleteKey(String key) { return up().deleteKey(key); }
            @Override public Duration timeout() { return shared.timeout(); }
            @Override public void close() {}
        };
    }

    private static KeepAlive node(int rank, Store shared, AtomicBoolean down) {
        return new KeepAlive(rank, 2, "10.77.0.1", ENDPOINT, INTERVAL, TIMEOUT, () -> connection(shared, down));
    }

    private static String awaitLost(KeepAlive k, long ms) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (k.lost() == null && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        return k.lost();
    }

    @Test
    void liveNodesAreNotLostAndASilentOneIsNamedWithItsAddress() throws Exception {
        HashStore store = new HashStore();
        AtomicBoolean down = new AtomicBoolean(false);
        try (KeepAlive node0 = node(0, store, down); KeepAlive node1 = node(1, store, down)) {
            node0.watchAll();
            node1.watchAll();
            Thread.sleep(3 * TIMEOUT.toMillis());
            assertNull(node0.lost());
            assertNull(node1.lost());
            assertFalse(node0.anyLate());
            assertEquals("node 1 (" + KeepAlive.localAddressTowards("10.77.0.1", ENDPOINT) + ")", node0.name(1));
            assertEquals("node 0 (10.77.0.1)", node1.name(0), "node 0 is known by the master address");

            long t0 = System.nanoTime();
            node1.close(); // dies without leaving
            String lost = awaitLost(node0, 5_000);
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            String addr = KeepAlive.localAddressTowards("10.77.0.1", ENDPOINT);
            assertEquals("lost node 1 (" + addr + "): no keep-alive for 0.6 s", lost);
            assertTrue(tookMs >= TIMEOUT.toMillis() - 100, "declared after " + tookMs + " ms");
            assertTrue(node0.isLost(1));
            assertFalse(node0.storeLost());
        }
    }

    @Test
    void aNodeThatLeftIsNotLost() throws Exception {
        HashStore store = new HashStore();
        AtomicBoolean down = new AtomicBoolean(false);
        try (KeepAlive node0 = node(0, store, down); KeepAlive node1 = node(1, store, down)) {
            node0.watchAll();
            node1.watchAll();
            Thread.sleep(200);
            node1.leave();
            node1.close();
            Thread.sleep(3 * TIMEOUT.toMillis());
            assertNull(node0.lost());
        }
    }

    @Test
    void anUnreachableStoreMeansNodeZeroIsLost() throws Exception {
        HashStore store = new HashStore();
        AtomicBoolean down = new AtomicBoolean(false);
        try (KeepAlive node0 = node(0, store, new AtomicBoolean(false)); KeepAlive node1 = node(1, store, down)) {
            node0.watchAll();
            node1.watchAll();
            Thread.sleep(200);
            down.set(true); // node 1 is cut off
            assertEquals("lost node 0 (10.77.0.1): the store at " + ENDPOINT + " did not answer for 0.6 s",
                    awaitLost(node1, 5_000));
            assertTrue(node1.storeLost());
            assertTrue(awaitLost(node0, 5_000).startsWith("lost node 1 ("), node0.lost());
        }
    }

    @Test
    void aShortOutageIsRiddenOut() throws Exception {
        HashStore store = new HashStore();
        AtomicBoolean down = new AtomicBoolean(false);
        try (KeepAlive node0 = node(0, store, new AtomicBoolean(false)); KeepAlive node1 = node(1, store, down)) {
            node0.watchAll();
            node1.watchAll();
            Thread.sleep(200);
            down.set(true);
            Thread.sleep(TIMEOUT.toMillis() / 2);
            assertTrue(node1.anyLate(), "half a timeout without the store is late");
            down.set(false);
            Thread.sleep(3 * TIMEOUT.toMillis());
            assertNull(node0.lost());
            assertNull(node1.lost());
            assertFalse(node1.anyLate());
        }
    }
}
