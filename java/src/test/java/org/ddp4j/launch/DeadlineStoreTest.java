package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.DistributedTimeoutException;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.distributed.store.Store;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link DeadlineStore}: calls pass through, and a store that stops answering cannot hold the caller. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class DeadlineStoreTest {

    @Test
    void callsPassThrough() {
        try (DeadlineStore s = new DeadlineStore(new HashStore(), Duration.ofSeconds(5), "10.77.0.1:29500")) {
            s.set("a", "x".getBytes(StandardCharsets.UTF_8));
            assertArrayEquals("x".getBytes(StandardCharsets.UTF_8), s.get("a"));
            assertEquals(2, s.add("n", 2));
            assertTrue(s.check(List.of("a", "n")));
        }
    }

    @Test
    void aStoreThatHangsTimesOutNamingTheStoreAndTheCall() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        HashStore inner = new HashStore();
        // A store whose check never answers (a stopped master, a partition) until released.
        Store hanging = new Store() {
            @Override public void set(String key, byte[] value) { inner.set(key, value); }
            @Override public byte[] get(String key) { return inner.get(key); }
            @Override public long add(String key, long delta) { return inner.add(key, delta); }
            @Override public byte[] compareSet(String k, byte[] e, byte[] d) { return inner.compareSet(k, e, d); }
            @Override public void waitFor(List<String> keys, Duration t) { inner.waitFor(keys, t); }
            @Override public boolean deleteKey(String key) { return inner.deleteKey(key); }
            @Override public Duration timeout() { return inner.timeout(); }
            @Override public void close() {}

            @Override
            public boolean check(List<String> keys) {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return inner.check(keys);
            }
        };
        try (DeadlineStore s = new DeadlineStore(hanging, Duration.ofMillis(500), "10.77.0.1:29500")) {
            long t0 = System.nanoTime();
            DistributedTimeoutException e = assertThrows(DistributedTimeoutException.class, () -> s.check(List.of("failed")));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals("the store at 10.77.0.1:29500 did not answer check[failed] within 0.5 s", e.getMessage());
            assertTrue(ms >= 450 && ms < 10_000, "gave up after " + ms + " ms");
            // Calls queued behind the hung one time out too, then all works again once it answers.
            assertThrows(DistributedTimeoutException.class, () -> s.add("n", 1));
            release.countDown();
            assertEquals(1, s.add("n", 1), "the call that timed out in the queue never ran");
        }
    }
}
