package org.ddp4j.distributed.store;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.*;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Behaviour every {@link Store} must have, checked with {@link #CLIENTS} clients of one store used
 * from as many threads. Subclasses say how to open the clients.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS) // backstop for every store test: their waits are bounded at 20 s or less
abstract class StoreContract {
    static final int CLIENTS = 4;
    static final Duration LONG = Duration.ofSeconds(10);
    static final Duration SHORT = Duration.ofMillis(300);

    private final List<AutoCloseable> toClose = new ArrayList<>();
    protected final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "store-test");
        t.setDaemon(true);
        return t;
    });

    /**
     * Opens {@code CLIENTS} handles on one fresh, shared store whose blocking calls wait up to
     * {@code timeout}. Element 0 may be the one that owns the store (e.g. the TcpStore server).
     */
    protected abstract List<Store> openClients(Duration timeout) throws Exception;

    /** How error messages name {@code key} (a PrefixStore names the prefixed key). */
    protected String keyName(String key) {
        return key;
    }

    /** The name of the store in its error messages. */
    protected abstract String storeName();

    protected List<Store> clients(Duration timeout) throws Exception {
        List<Store> stores = openClients(timeout);
        // close clients before the owner (element 0)
        for (Store s : stores) {
            toClose.add(0, s);
        }
        return stores;
    }

    @AfterEach
    void closeAll() throws Exception {
        pool.shutdownNow();
        for (AutoCloseable c : toClose) {
            c.close();
        }
        toClose.clear();
    }

    static byte[] b(String s) {
        return s.getBytes(UTF_8);
    }

    static String s(byte[] b) {
        return new String(b, UTF_8);
    }

    @Test
    void setThenGetFromAnotherClient() throws Exception {
        List<Store> st = clients(LONG);
        byte[] value = b("hello");
        st.get(0).set("k", value);
        value[0] = 'X'; // the store keeps its own copy
        assertEquals("hello", s(st.get(3).get("k")));
        st.get(2).set("k", b("world"));
        assertEquals("world", s(st.get(1).get("k")));
        st.get(1).set("empty", new byte[0]);
        assertArrayEquals(new byte[0], st.get(0).get("empty"));
        assertEquals(LONG, st.get(0).timeout());
    }

    @Test
    void blockingGetIsReleasedByLaterSet() throws Exception {
        List<Store> st = clients(LONG);
        List<Future<String>> waiting = new ArrayList<>();
        for (int i = 1; i < CLIENTS; i++) {
            Store c = st.get(i);
            waiting.add(pool.submit(() -> s(c.get("late"))));
        }
        Thread.sleep(150);
        for (Future<String> f : waiting) {
            assertFalse(f.isDone(), "get returned before the key was set");
        }
        // a client not blocked can still use the store while others wait
        assertEquals(1, st.get(0).add("other", 1));
        st.get(0).set("late", b("now"));
        for (Future<String> f : waiting) {
            assertEquals("now", f.get(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void concurrentAddsSumAndEachReturnsADistinctNewValue() throws Exception {
        List<Store> st = clients(LONG);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<List<Long>>> results = new ArrayList<>();
        for (Store c : st) {
            results.add(pool.submit(() -> {
                start.await();
                List<Long> seen = new ArrayList<>();
                for (int i = 0; i < 100; i++) {
                    seen.add(c.add("counter", 1));
                }
                return seen;
            }));
        }
        start.countDown();
        Set<Long> all = new HashSet<>();
        for (Future<List<Long>> f : results) {
            List<Long> seen = f.get(20, TimeUnit.SECONDS);
            for (int i = 1; i < seen.size(); i++) {
                assertTrue(seen.get(i) > seen.get(i - 1), "a client's own adds must see increasing values");
            }
            all.addAll(seen);
        }
        assertEquals(400, all.size(), "every add must return a distinct new value");
        assertEquals(1L, Collections.min(all));
        assertEquals(400L, Collections.max(all));
        assertEquals(400, st.get(2).add("counter", 0));
        assertEquals("400", s(st.get(1).get("counter")));
    }

    @Test
    void addReturnsNewValueStoredAsDecimal() throws Exception {
        List<Store> st = clients(LONG);
        assertEquals(5, st.get(0).add("c", 5));
        assertEquals(3, st.get(1).add("c", -2));
        assertEquals("3", s(st.get(2).get("c")));
        st.get(3).set("c", b("41"));
        assertEquals(42, st.get(0).add("c", 1));
        assertEquals(-7, st.get(0).add("neg", -7));
        assertEquals("-7", s(st.get(1).get("neg")));
    }

    @Test
    void addOnANonCounterValueFails() throws Exception {
        List<Store> st = clients(LONG);
        st.get(0).set("text", b("abc"));
        DistributedException e = assertThrows(DistributedException.class, () -> st.get(1).add("text", 1));
        assertFalse(e instanceof DistributedTimeoutException);
        assertTrue(e.getMessage().contains("text"), e.getMessage());
        // the store is still usable afterwards
        assertEquals(1, st.get(1).add("fine", 1));
        assertEquals("abc", s(st.get(2).get("text")));
    }

    @Test
    void compareSetFollowsPyTorchSemantics() throws Exception {
        List<Store> st = clients(SHORT);
        // absent key, non-empty expected: nothing is set, expected comes back
        assertEquals("x", s(st.get(0).compareSet("k", b("x"), b("y"))));
        assertFalse(st.get(1).check(List.of("k")));
        // absent key, empty expected: set
        assertEquals("first", s(st.get(1).compareSet("k", new byte[0], b("first"))));
        assertEquals("first", s(st.get(2).get("k")));
        // wrong expected: unchanged, current value comes back
        assertEquals("first", s(st.get(2).compareSet("k", b("nope"), b("second"))));
        assertEquals("first", s(st.get(3).get("k")));
        // right expected: swapped
        assertEquals("second", s(st.get(3).compareSet("k", b("first"), b("second"))));
        assertEquals("second", s(st.get(0).get("k")));
    }

    @Test
    void concurrentCompareSetHasExactlyOneWinner() throws Exception {
        List<Store> st = clients(LONG);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<String>> results = new ArrayList<>();
        for (int i = 0; i < CLIENTS; i++) {
            Store c = st.get(i);
            String mine = "rank" + i;
            results.add(pool.submit(() -> {
                start.await();
                return s(c.compareSet("leader", new byte[0], b(mine)));
            }));
        }
        start.countDown();
        Set<String> seen = new HashSet<>();
        for (Future<String> f : results) {
            seen.add(f.get(10, TimeUnit.SECONDS));
        }
        assertEquals(1, seen.size(), "all clients must see the same winner, saw " + seen);
        assertEquals(seen.iterator().next(), s(st.get(0).get("leader")));
    }

    @Test
    void deleteKeyAndCheck() throws Exception {
        List<Store> st = clients(SHORT);
        st.get(0).set("a", b("1"));
        st.get(1).set("b", b("2"));
        assertTrue(st.get(2).check(List.of("a", "b")));
        assertFalse(st.get(2).check(List.of("a", "b", "c")));
        assertTrue(st.get(3).check(List.of()));
        assertTrue(st.get(3).deleteKey("a"));
        assertFalse(st.get(0).deleteKey("a"), "second delete must report the key absent");
        assertFalse(st.get(1).check(List.of("a")));
        assertTrue(st.get(1).check(List.of("b")));
        assertThrows(DistributedTimeoutException.class, () -> st.get(2).get("a"));
        st.get(0).set("a", b("again"));
        assertEquals("again", s(st.get(3).get("a")));
        // a deleted counter starts again from 0
        st.get(0).add("n", 5);
        assertTrue(st.get(1).deleteKey("n"));
        assertEquals(1, st.get(2).add("n", 1));
    }

    @Test
    void getTimeoutNamesTheMissingKey() throws Exception {
        List<Store> st = clients(SHORT);
        long t0 = System.nanoTime();
        DistributedTimeoutException e =
                assertThrows(DistributedTimeoutException.class, () -> st.get(1).get("never-set"));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 250, "gave up after " + ms + " ms, before the 300 ms timeout");
        assertTrue(ms < 5_000, "took " + ms + " ms for a 300 ms timeout");
        assertTrue(e.getMessage().contains("\"" + keyName("never-set") + "\""), e.getMessage());
        assertTrue(e.getMessage().contains("300 ms"), e.getMessage());
        assertTrue(e.getMessage().contains(storeName()), e.getMessage());
        // the client is still usable after a timeout
        st.get(1).set("later", b("ok"));
        assertEquals("ok", s(st.get(2).get("later")));
    }

    @Test
    void waitForIsReleasedWhenAllKeysAreSet() throws Exception {
        List<Store> st = clients(LONG);
        Future<?> waiter = pool.submit(() -> {
            st.get(0).waitFor(List.of("r1", "r2", "r3"));
            return null;
        });
        for (int i = 1; i < CLIENTS; i++) {
            Thread.sleep(50);
            assertFalse(waiter.isDone(), "waitFor returned with keys missing");
            st.get(i).set("r" + i, b("up"));
        }
        waiter.get(5, TimeUnit.SECONDS);
        st.get(1).waitFor(List.of("r1", "r2", "r3"), Duration.ZERO); // all present: returns at once
    }

    @Test
    void waitForTimeoutNamesOnlyTheMissingKeys() throws Exception {
        List<Store> st = clients(LONG);
        st.get(0).set("present", b("1"));
        long t0 = System.nanoTime();
        DistributedTimeoutException e = assertThrows(DistributedTimeoutException.class,
                () -> st.get(3).waitFor(List.of("present", "gone1", "gone2"), SHORT));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 250 && ms < 5_000, "waited " + ms + " ms for a 300 ms timeout");
        assertTrue(e.getMessage().contains("\"" + keyName("gone1") + "\""), e.getMessage());
        assertTrue(e.getMessage().contains("\"" + keyName("gone2") + "\""), e.getMessage());
        assertFalse(e.getMessage().contains("\"" + keyName("present") + "\""), e.getMessage());
    }

    /** Runs {@code body} in the pool and returns its future (for subclasses). */
    protected <T> Future<T> async(Callable<T> body) {
        return pool.submit(body);
    }

    static void assertStillRunning(Future<?> f) throws Exception {
        try {
            f.get(100, TimeUnit.MILLISECONDS);
            fail("expected the call to be blocked");
        } catch (TimeoutException expected) {
            // still blocked
        }
    }
}
