package org.ddp4j.distributed;

import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.tensor.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The Gloo group's shared-memory paths against a plain Java reference, with ranks as threads of
 * this JVM (one pid: the transport must work there too): one host ("shm"), two pretend hosts
 * through per-rank host identities ("shm+gloo", hierarchical), and shared memory off ("gloo").
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS) // backstop above Ranks' limit, which names a hung rank first
class ShmProcessGroupTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final Duration LIMIT = Duration.ofSeconds(120);
    /** 0, 1, odd, and beyond one 512 KiB chunk per rank (8 chunks of float32, 16 of int64). */
    private static final int[] SIZES = {0, 1, 1001, (1 << 20) + 3};

    /** Values in {-2, -1.5, ..., 2}: sums and products of up to 4 of them are exact in float32. */
    private static int value(int rank, int i) {
        return (rank * 7 + i * 3) % 9 - 4;
    }

    private static float[] floats(int rank, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = value(rank, i) * 0.5f;
        }
        return v;
    }

    private static long[] longs(int rank, int n) {
        long[] v = new long[n];
        for (int i = 0; i < n; i++) {
            v[i] = value(rank, i);
        }
        return v;
    }

    private static float[] expectedFloats(ReduceOp op, int world, int n) {
        float[] out = floats(0, n);
        for (int r = 1; r < world; r++) {
            float[] v = floats(r, n);
            for (int i = 0; i < n; i++) {
                out[i] = switch (op) {
                    case SUM, AVG -> out[i] + v[i];
                    case PRODUCT -> out[i] * v[i];
                    case MIN -> Math.min(out[i], v[i]);
                    case MAX -> Math.max(out[i], v[i]);
                };
            }
        }
        if (op == ReduceOp.AVG) {
            for (int i = 0; i < n; i++) {
                out[i] /= world;
            }
        }
        return out;
    }

    private static long[] expectedLongs(ReduceOp op, int world, int n) {
        long[] out = longs(0, n);
        for (int r = 1; r < world; r++) {
            long[] v = longs(r, n);
            for (int i = 0; i < n; i++) {
                out[i] = switch (op) {
                    case SUM, AVG -> out[i] + v[i];
                    case PRODUCT -> out[i] * v[i];
                    case MIN -> Math.min(out[i], v[i]);
                    case MAX -> Math.max(out[i], v[i]);
                };
            }
        }
        return out;
    }

    /** Rank r's host identity in a layout: null = the real one; "off" = shared memory off. */
    private static String hostOf(String layout, int rank, int world) {
        return switch (layout) {
            case "shm", "off" -> null;
            // Ranks 0..1 on host A, the rest on B: 2 ranks -> A,B (plain Gloo); 3 -> A,A,B; 4 -> A,A,B,B.
            case "hosts" -> "test-host-" + (rank < 2 && world > 2 ? "A" : rank < 1 ? "A" : "B");
            default -> throw new IllegalArgumentException(layout);
        };
    }

    private static ProcessGroupGloo group(HashStore store, int rank, int world, boolean shm, String hostId) {
        GlooOptions options = GlooOptions.fromEnvironment(System.getenv()).withShm(shm, hostId);
        return new ProcessGroupGloo(store, rank, world, TIMEOUT, "127.0.0.1", null, options);
    }

    /** Runs body on every rank of a group in the given layout, bounded by {@link #LIMIT}. */
    private static <T> List<T> withLayout(String layout, int world, Ranks.GroupBody<T> body) throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<Ranks.Outcome<T>> outcomes = Ranks.collect(world, LIMIT, rank -> {
            try (ProcessGroupGloo g = group(store, rank, world, !layout.equals("off"), hostOf(layout, rank, world))) {
                return body.run(rank, g);
            }
        });
        List<T> values = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            Ranks.Outcome<T> o = outcomes.get(r);
            if (o.error() != null) {
                throw new AssertionError("rank " + r + " failed: " + o.error(), o.error());
            }
            values.add(o.value());
        }
        return values;
    }

    private static String expectedTransport(String layout, int world) {
        return switch (layout) {
            case "shm" -> "shm";
            case "off" -> "gloo";
            default -> world > 2 ? "shm+gloo" : "gloo";
        };
    }

    @ParameterizedTest(name = "{0}, world {1}")
    @CsvSource({"shm, 2", "shm, 3", "shm, 4", "hosts, 2", "hosts, 3", "hosts, 4", "off, 2", "off, 3"})
    void everyCollectiveMatchesThePlainReference(String layout, int world) throws Exception {
        AtomicInteger arrived = new AtomicInteger();
        withLayout(layout, world, (rank, group) -> {
            ProcessGroupGloo g = (ProcessGroupGloo) group;
            assertEquals(expectedTransport(layout, world), g.transport(), "transport on rank " + rank);
            for (int n : SIZES) {
                for (ReduceOp op : ReduceOp.values()) {
                    Tensor f = Tensor.of(floats(rank, n), n);
                    g.allReduce(f, op).await();
                    float[] want = expectedFloats(op, world, n);
                    // AVG: the ranks multiply by 1/world, the reference divides: within an ulp.
                    assertArrayEquals(want, f.toFloatArray(), op == ReduceOp.AVG ? 1e-6f : 0f,
                            op + " float32 n=" + n + " on rank " + rank);
                    if (op != ReduceOp.AVG) {
                        Tensor l = Tensor.ofLongs(longs(rank, n), n);
                        g.allReduce(l, op).await();
                        assertArrayEquals(expectedLongs(op, world, n), l.toLongArray(),
                                op + " int64 n=" + n + " on rank " + rank);
                    }
                }
                for (int root = 0; root < world; root++) {
                    Tensor b = rank == root ? Tensor.of(floats(root + 10, n), n) : Tensor.zeros(n);
                    g.broadcast(b, root).await();
                    assertArrayEquals(floats(root + 10, n), b.toFloatArray(), 0f,
                            "broadcast from " + root + " n=" + n + " on rank " + rank);
                }
                Tensor in = Tensor.ofLongs(longs(rank, n), n);
                Tensor flat = Tensor.ofLongs(new long[n * world], (long) n * world);
                g.allGatherIntoTensor(flat, in).await();
                List<Tensor> outs = new ArrayList<>();
                for (int r = 0; r < world; r++) {
                    outs.add(Tensor.ofLongs(new long[n], n));
                }
                g.allGather(outs, in).await();
                long[] gathered = flat.toLongArray();
                for (int r = 0; r < world; r++) {
                    long[] want = longs(r, n);
                    long[] block = new long[n];
                    System.arraycopy(gathered, r * n, block, 0, n);
                    assertArrayEquals(want, block, "allGatherIntoTensor block " + r + " n=" + n + " on rank " + rank);
                    assertArrayEquals(want, outs.get(r).toLongArray(), "allGather[" + r + "] n=" + n + " on rank " + rank);
                }
            }
            arrived.incrementAndGet();
            g.barrier().await();
            // Nobody leaves the barrier before everyone has entered it.
            assertEquals(world, arrived.get(), "ranks past the barrier on rank " + rank);
            return null;
        });
    }

    @Test
    void smallAllReduceOnOneHostCompletesOnTheCallingThread() throws Exception {
        withLayout("shm", 2, (rank, group) -> {
            Tensor t = Tensor.of(new float[] {rank + 1f, 2f}, 2);
            Work w = group.allReduce(t, ReduceOp.SUM);
            // Run inline: the Work is complete when allReduce returns (the queue was idle).
            assertTrue(w.isCompleted(), "small shm all-reduce should complete on the calling thread");
            assertArrayEquals(new float[] {3f, 4f}, t.toFloatArray(), 0f);
            return null;
        });
    }

    /** A rank that closes its group aborts the segment: its host peer fails at once, naming it. */
    @Test
    void aRankThatClosesItsGroupReleasesItsHostPeersAtOnce() throws Exception {
        List<Long> millis = withLayout("shm", 2, (rank, group) -> {
            if (rank == 0) {
                group.close();
                return 0L;
            }
            Thread.sleep(200); // rank 0 has closed by now
            long start = System.nanoTime();
            Tensor t = Tensor.zeros(8);
            var e = assertThrows(DistributedException.class, () -> group.allReduce(t, ReduceOp.SUM).await());
            assertTrue(e.getMessage().contains("rank 0 closed its process group"), e.getMessage());
            return (System.nanoTime() - start) / 1_000_000;
        });
        assertTrue(millis.get(1) < TIMEOUT.toMillis() / 2, "rank 1 waited " + millis.get(1) + " ms, the timeout is "
                + TIMEOUT.toMillis() + " ms");
    }

    /** Ranks that disagree: the transport compares descriptors (no Gloo header on one host). */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"op", "dtype", "count", "root", "kind"})
    void disagreeingRanksFailWithDistributedException(String what) throws Exception {
        long start = System.nanoTime();
        List<Throwable> errors = withLayout("shm", 2, (rank, group) -> {
            Tensor t = switch (what) {
                case "dtype" -> rank == 0 ? Tensor.zeros(8) : Tensor.ofLongs(new long[8], 8);
                case "count" -> Tensor.zeros(8 + rank);
                default -> Tensor.zeros(8);
            };
            return assertThrows(RuntimeException.class, () -> {
                switch (what) {
                    case "op" -> group.allReduce(t, rank == 0 ? ReduceOp.SUM : ReduceOp.MAX).await();
                    case "root" -> group.broadcast(t, rank).await();
                    case "kind" -> {
                        if (rank == 0) {
                            group.allReduce(t, ReduceOp.SUM).await();
                        } else {
                            group.broadcast(t, 0).await();
                        }
                    }
                    default -> group.allReduce(t, ReduceOp.SUM).await();
                }
            }, what + " mismatch on rank " + rank);
        });
        for (int r = 0; r < errors.size(); r++) {
            Throwable e = errors.get(r);
            assertNotNull(e);
            assertInstanceOf(DistributedException.class, e, "rank " + r + ": " + e);
        }
        // Seen at once, not at the timeout: a broadcast's header goes through the segment too.
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(millis < TIMEOUT.toMillis() / 2, what + " mismatch took " + millis + " ms");
    }
}
