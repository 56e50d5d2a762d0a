package org.ddp4j.distributed;

import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.tensor.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Collectives of the Gloo backend, with ranks as threads of this JVM sharing a HashStore. */
@Timeout(value = 120, unit = TimeUnit.SECONDS) // backstop above Ranks.HANG_LIMIT, which names a hung rank first
class ProcessGroupGlooTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final int N = 7;

    /** Rank r's input: mixed signs and magnitudes so that MIN, MAX and PRODUCT differ from SUM. */
    private static float[] input(int rank) {
        float[] v = new float[N];
        for (int i = 0; i < N; i++) {
            v[i] = (i % 2 == 0 ? 1 : -1) * (rank + 1) * 0.5f + i;
        }
        return v;
    }

    private static float[] expected(ReduceOp op, int world) {
        float[] out = input(0);
        for (int r = 1; r < world; r++) {
            float[] v = input(r);
            for (int i = 0; i < N; i++) {
                switch (op) {
                    case SUM, AVG -> out[i] += v[i];
                    case PRODUCT -> out[i] *= v[i];
                    case MIN -> out[i] = Math.min(out[i], v[i]);
                    case MAX -> out[i] = Math.max(out[i], v[i]);
                }
            }
        }
        if (op == ReduceOp.AVG) {
            for (int i = 0; i < N; i++) {
                out[i] /= world;
            }
        }
        return out;
    }

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {2, 3, 4})
    void allReduceEveryOp(int world) throws Exception {
        Ranks.withGroups(world, TIMEOUT, (rank, group) -> {
            assertEquals(rank, group.rank());
            assertEquals(world, group.size());
            assertEquals("gloo", group.backend());
            for (ReduceOp op : ReduceOp.values()) {
                Tensor t = Tensor.of(input(rank), N);
                group.allReduce(t, op).await();
                assertArrayEquals(expected(op, world), t.toFloatArray(), 1e-5f, op + " on rank " + rank);
            }
            return null;
        });
    }

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {2, 3, 4})
    void broadcastFromLastRankAndAllGather(int world) throws Exception {
        int root = world - 1;
        Ranks.withGroups(world, TIMEOUT, (rank, group) -> {
            Tensor t = rank == root ? Tensor.of(new float[] {3, 1, 4, 1, 5, 9}, 2, 3) : Tensor.zeros(2, 3);
            group.broadcast(t, root).await();
            assertArrayEquals(new float[] {3, 1, 4, 1, 5, 9}, t.toFloatArray(), 0f, "broadcast on rank " + rank);

            Tensor in = Tensor.of(new float[] {rank, 10 * rank}, 2);
            List<Tensor> outs = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                outs.add(Tensor.zeros(1, 2)); // shape may differ from the input's; element count may not
            }
            group.allGather(outs, in).await();
            Tensor flat = Tensor.zeros(world * 2L);
            group.allGatherIntoTensor(flat, in).await();
            for (int r = 0; r < world; r++) {
                assertArrayEquals(new float[] {r, 10 * r}, outs.get(r).toFloatArray(), 0f, "allGather[" + r + "]");
            }
            float[] all = flat.toFloatArray();
            for (int r = 0; r < world; r++) {
                assertEquals(r, all[2 * r], 0f);
                assertEquals(10 * r, all[2 * r + 1], 0f);
            }
            group.barrier().await();
            return null;
        });
    }

    @Test
    void allReduceInt64AndRejectsAvgOnIt() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            Tensor t = Tensor.ofLongs(new long[] {rank + 1, 1L << 40}, 2);
            group.allReduce(t, ReduceOp.SUM).await();
            assertArrayEquals(new long[] {3, 1L << 41}, t.toLongArray());
            var e = assertThrows(IllegalArgumentException.class, () -> group.allReduce(t, ReduceOp.AVG));
            assertTrue(e.getMessage().contains("AVG"), e.getMessage());
            return null;
        });
    }

    @Test
    void queuedCollectivesRunInIssueOrder() throws Exception {
        int world = 3;
        Ranks.withGroups(world, TIMEOUT, (rank, group) -> {
            Tensor same = Tensor.of(new float[] {rank + 1, 1}, 2);
            Tensor other = Tensor.of(new float[] {rank}, 1);
            List<Work> works = new ArrayList<>();
            works.add(group.allReduce(same, ReduceOp.SUM));      // {6, 3}
            works.add(group.allReduce(other, ReduceOp.MAX));     // {2}
            works.add(group.allReduce(same, ReduceOp.SUM));      // {18, 9}
            works.add(group.broadcast(other, 0));                // rank 0's {2}
            works.add(group.allReduce(same, ReduceOp.PRODUCT));  // {18^3, 9^3}
            works.add(group.allReduce(other, ReduceOp.SUM));     // {6}
            for (int i = works.size() - 1; i >= 0; i--) {        // awaiting in reverse order is fine
                works.get(i).await();
            }
            works.forEach(w -> assertTrue(w.isCompleted()));
            assertArrayEquals(new float[] {18 * 18 * 18, 9 * 9 * 9}, same.toFloatArray(), 0f);
            assertArrayEquals(new float[] {6}, other.toFloatArray(), 0f);
            works.get(0).await(); // again: returns at once
            return null;
        });
    }

    @Test
    void wrongSizeAllReduceFailsCleanlyAndTheGroupStaysUsable() throws Exception {
        long start = System.nanoTime();
        Ranks.withGlooGroups(2, Duration.ofSeconds(5), (rank, group) -> {
            Tensor t = Tensor.zeros(rank == 0 ? 10 : 12);
            Work w = group.allReduce(t, ReduceOp.SUM);
            var e = assertThrows(DistributedException.class, w::await);
            assertFalse(e instanceof DistributedTimeoutException, e.getMessage());
            // Each rank names its own call first, then the peer's.
            String mine = "allReduce(SUM) of " + (rank == 0 ? 10 : 12) + " float32 elements (#";
            String theirs = "rank " + (1 - rank) + " called allReduce(SUM) of " + (rank == 0 ? 12 : 10) + " float32";
            assertTrue(e.getMessage().startsWith(mine), e.getMessage());
            assertTrue(e.getMessage().contains("on rank " + rank + ": a peer called a different collective: " + theirs),
                    e.getMessage());
            assertThrows(DistributedException.class, w::await); // the error sticks
            assertTrue(w.isCompleted());

            // A different collective on each rank is caught the same way.
            Tensor x = Tensor.ones(3);
            Work mixed = rank == 0 ? group.allReduce(x, ReduceOp.SUM) : group.broadcast(x, 0);
            var e2 = assertThrows(DistributedException.class, mixed::await);
            assertTrue(e2.getMessage().contains("broadcast from rank 0 of 3 float32 elements"), e2.getMessage());

            // Nothing went over the wire wrongly, so the group still works.
            Tensor ok = Tensor.ones(4);
            group.allReduce(ok, ReduceOp.SUM).await();
            assertArrayEquals(new float[] {2, 2, 2, 2}, ok.toFloatArray(), 0f);
            return null;
        });
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(4), "the mismatch must fail fast, not time out");
    }

    @Test
    void aRankThatNeverJoinsIsNamed() throws Exception {
        HashStore store = new HashStore(Duration.ofSeconds(10));
        long start = System.nanoTime();
        var outcomes = Ranks.collect(2, rank -> new ProcessGroupGloo(store, rank, 3, Duration.ofSeconds(1), "127.0.0.1"));
        for (var o : outcomes) {
            assertNotNull(o.error(), "the group must not form without rank 2");
            var e = assertInstanceOf(DistributedTimeoutException.class, o.error());
            assertTrue(e.getMessage().contains("rank 2 of 3 did not join within 1 s"), e.getMessage());
            assertTrue(e.getMessage().contains("MASTER_ADDR/MASTER_PORT"), e.getMessage());
        }
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(8));
    }

    @ParameterizedTest(name = "rank {0} of 2 leaves")
    @ValueSource(ints = {0, 1})
    void aPeerThatLeavesIsNamed(int leaver) throws Exception {
        HashStore store = new HashStore(Duration.ofSeconds(10));
        CountDownLatch left = new CountDownLatch(1);
        Ranks.run(2, rank -> {
            try (ProcessGroupGloo group = Ranks.glooOnly(store, rank, 2, Duration.ofSeconds(5))) {
                group.barrier().await();
                if (rank == leaver) {
                    group.close();
                    left.countDown();
                    assertThrows(IllegalStateException.class, group::barrier);
                    return null;
                }
                assertTrue(left.await(10, TimeUnit.SECONDS));
                Thread.sleep(100); // let the closed connection reach this rank
                var e = assertThrows(DistributedException.class, () -> group.allReduce(Tensor.ones(8)).await());
                assertFalse(e instanceof DistributedTimeoutException, e.getMessage());
                assertTrue(e.getMessage().contains("allReduce(SUM) of 8 float32 elements"), e.getMessage());
                assertTrue(e.getMessage().contains("peer rank " + leaver + " may have died"), e.getMessage());
                var later = assertThrows(DistributedException.class, () -> group.barrier().await());
                assertTrue(later.getMessage().contains("failed earlier"), later.getMessage());
                return null;
            }
        });
    }

    @Test
    void aFailureReachesRanksThatDoNotTalkToTheDeadPeer() throws Exception {
        // In a ring of 4, rank 1 never exchanges data with rank 3 directly; it must still fail
        // promptly (the ranks that saw the failure close their connections), not at its timeout.
        int world = 4;
        int leaver = 3;
        HashStore store = new HashStore(Duration.ofSeconds(10));
        CountDownLatch left = new CountDownLatch(1);
        long start = System.nanoTime();
        List<String> messages = Ranks.run(world, rank -> {
            try (ProcessGroupGloo group = Ranks.glooOnly(store, rank, world, Duration.ofSeconds(20))) {
                group.barrier().await();
                if (rank == leaver) {
                    group.close();
                    left.countDown();
                    return null;
                }
                assertTrue(left.await(10, TimeUnit.SECONDS));
                Thread.sleep(100);
                var e = assertThrows(DistributedException.class, () -> group.allReduce(Tensor.ones(1000)).await());
                assertFalse(e instanceof DistributedTimeoutException, e.getMessage());
                return e.getMessage();
            }
        });
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "survivors must fail fast");
        assertTrue(messages.stream().anyMatch(m -> m != null && m.contains("peer rank 3 may have died")),
                messages.toString());
    }

    @Test
    void aPeerThatDoesNotCallTimesOutNamingTheOp() throws Exception {
        HashStore store = new HashStore(Duration.ofSeconds(10));
        CountDownLatch done = new CountDownLatch(1);
        Ranks.run(2, rank -> {
            try (ProcessGroupGloo group = Ranks.glooOnly(store, rank, 2, Duration.ofMillis(500))) {
                if (rank == 1) {
                    assertTrue(done.await(10, TimeUnit.SECONDS)); // never takes part
                    return null;
                }
                Work w = group.allReduce(Tensor.ones(5), ReduceOp.MAX);
                // A short await expires first, without failing the op...
                var waitTimeout = assertThrows(DistributedTimeoutException.class, () -> w.await(Duration.ofMillis(50)));
                assertTrue(waitTimeout.getMessage().contains("did not complete within 50 ms"), waitTimeout.getMessage());
                // ...then the op's own timeout.
                var e = assertThrows(DistributedTimeoutException.class, w::await);
                done.countDown();
                assertTrue(e.getMessage().matches("(?s).*allReduce\\(MAX\\) of 5 float32 elements \\(#\\d+\\) timed out"
                        + " after 500 ms.*"), e.getMessage());
                return null;
            } finally {
                done.countDown();
            }
        });
    }

    @Test
    void argumentErrorsAreThrownAtTheCall() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            assertThrows(IllegalArgumentException.class, () -> group.broadcast(Tensor.ones(2), 2));
            assertThrows(IllegalArgumentException.class, () -> group.allGather(List.of(Tensor.ones(2)), Tensor.ones(2)));
            assertThrows(IllegalArgumentException.class, () -> group.allGatherIntoTensor(Tensor.ones(3), Tensor.ones(2)));
            group.barrier().await(); // the rejected calls queued nothing
            return null;
        });
    }

    /** A HashStore whose set throws {@code failure} (the native rendezvous sets its own key first). */
    private static Store failingSet(RuntimeException failure) {
        HashStore inner = new HashStore(TIMEOUT);
        return new Store() {
            @Override
            public void set(String key, byte[] value) {
                throw failure;
            }

            @Override
            public byte[] get(String key) {
                return inner.get(key);
            }

            @Override
            public long add(String key, long delta) {
                return inner.add(key, delta);
            }

            @Override
            public byte[] compareSet(String key, byte[] expected, byte[] desired) {
                return inner.compareSet(key, expected, desired);
            }

            @Override
            public void waitFor(List<String> keys, Duration timeout) {
                inner.waitFor(keys, timeout);
            }

            @Override
            public boolean check(List<String> keys) {
                return inner.check(keys);
            }

            @Override
            public boolean deleteKey(String key) {
                return inner.deleteKey(key);
            }

            @Override
            public Duration timeout() {
                return inner.timeout();
            }
        };
    }

    @Test
    void storeFailuresReachTheCallerThroughTheNativeRendezvous() {
        // Another exception: a DistributedException naming the store call and the exception.
        var e = assertThrows(DistributedException.class, () -> new ProcessGroupGloo(
                failingSet(new IllegalStateException("disk full")), 0, 1, TIMEOUT, "127.0.0.1"));
        assertFalse(e instanceof DistributedTimeoutException, e.toString());
        assertTrue(e.getMessage().contains("Store.set(\"ddp4j/joined/0\") failed: java.lang.IllegalStateException: disk full"),
                e.getMessage());
        // The store's own distributed errors keep their class and message.
        var t = assertThrows(DistributedTimeoutException.class, () -> new ProcessGroupGloo(
                failingSet(new DistributedTimeoutException("the store server is gone")), 0, 1, TIMEOUT, "127.0.0.1"));
        assertTrue(t.getMessage().contains("the store server is gone"), t.getMessage());
    }

    @Test
    void worldOfOne() throws Exception {
        try (ProcessGroupGloo group = new ProcessGroupGloo(new HashStore(), 0, 1, TIMEOUT, "127.0.0.1")) {
            Tensor t = Tensor.of(new float[] {1, 2}, 2);
            group.allReduce(t, ReduceOp.AVG).await();
            assertArrayEquals(new float[] {1, 2}, t.toFloatArray(), 0f);
            Tensor out = Tensor.zeros(2);
            group.allGather(List.of(out), t).await();
            assertArrayEquals(new float[] {1, 2}, out.toFloatArray(), 0f);
            group.barrier().await();
        }
    }
}
