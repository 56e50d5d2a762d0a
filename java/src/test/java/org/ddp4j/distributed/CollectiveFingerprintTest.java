package org.ddp4j.distributed;

import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.nn.Linear;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.ddp4j.nn.parallel.DistributedDataParallel;

/**
 * Mismatched collectives: rank 0 in a DDP backward while another rank all-reduces a metric. DDP's
 * bucket all-reduces carry a fingerprint (collective number, op, dtype, size, bucket) with their
 * data, so every rank fails with a DistributedException naming its own call and the peer's, and
 * nobody goes on with a wrong gradient. Ranks are threads of this JVM, each with its own group.
 *
 * <p>Layouts: "shm" (one host, shared memory), "gloo" (DDP4J_SHM=0: plain Gloo), "hosts" (two
 * pretend hosts: ranks 0-1 on A, 2 on B, shared memory inside A and Gloo between the hosts).
 * Bucket sizes: 68 floats (inside the small all-reduce's message on Gloo) and 131,076 floats
 * (512 KiB: Gloo's ring, after one small fingerprint message each way).
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS) // backstop above Ranks' limit, which names a hung rank first
class CollectiveFingerprintTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final Duration LIMIT = Duration.ofSeconds(120);

    /** What the ranks other than the DDP ones call while those run backward. */
    enum Other {
        /** A 1-element SUM, as a loss metric. */
        METRIC,
        /** An AVG of exactly the bucket's size: only the fingerprint's DDP bucket tells them apart. */
        SAME_SIZE
    }

    private static ProcessGroupGloo group(HashStore store, int rank, int world, String layout) {
        GlooOptions options = GlooOptions.fromEnvironment(System.getenv());
        options = switch (layout) {
            case "shm" -> options.withShm(true, null);
            case "gloo" -> options.withShm(false, null);
            case "hosts" -> options.withShm(true, "fingerprint-host-" + (rank < 2 ? "A" : "B"));
            default -> throw new IllegalArgumentException(layout);
        };
        return new ProcessGroupGloo(store, rank, world, TIMEOUT, "127.0.0.1", null, options);
    }

    /** One rank's failure: its message and how long after the mismatched call it came. */
    record Failure(String message, long millis, DistributedException error) {}

    /**
     * Rank 1 calls {@code other}; every other rank runs a DDP backward of a Linear(in, 4) (one
     * bucket of 4 x in + 4 gradient floats and 3 flags). Returns each rank's failure (an AssertionError if one
     * succeeded).
     */
    private static List<Failure> mismatch(String layout, int world, int in, Other other) throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<Ranks.Outcome<Failure>> outcomes = Ranks.collect(world, LIMIT, rank -> {
            try (ProcessGroupGloo g = group(store, rank, world, layout);
                    DistributedDataParallel ddp = new DistributedDataParallel(
                            new Linear(in, 4, true, new Generator(rank)), g, 25L << 20)) {
                assertEquals(1, ddp.bucketBytes().size(), "one bucket");
                long bucketFloats = ddp.bucketNumel().get(0);
                long start = System.nanoTime();
                try (var scope = Tensors.scope()) {
                    if (rank == 1) {
                        Tensor t = other == Other.METRIC ? Tensor.of(new float[] {0.25f}, 1) : Tensor.zeros(bucketFloats);
                        g.allReduce(t, other == Other.METRIC ? ReduceOp.SUM : ReduceOp.AVG).await();
                    } else {
                        ddp.forward(Tensor.ones(2, in)).sum().backward();
                    }
                } catch (RuntimeException e) {
                    DistributedException d = distributed(e);
                    assertNotNull(d, "rank " + rank + " failed without a DistributedException: " + e);
                    return new Failure(d.getMessage(), (System.nanoTime() - start) / 1_000_000, d);
                }
                throw new AssertionError("rank " + rank + " went on after a mismatched collective ("
                        + (rank == 1 ? other : "DDP backward") + ")");
            }
        });
        List<Failure> failures = new java.util.ArrayList<>();
        for (int r = 0; r < world; r++) {
            Ranks.Outcome<Failure> o = outcomes.get(r);
            if (o.error() != null) {
                throw new AssertionError("rank " + r + ": " + o.error(), o.error());
            }
            failures.add(o.value());
        }
        return failures;
    }

    private static DistributedException distributed(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof DistributedException d) {
                return d;
            }
        }
        return null;
    }

    @ParameterizedTest(name = "{0}, {1} ranks, Linear({2}, 4), {3}")
    @CsvSource({
        "shm, 2, 16, METRIC", "shm, 2, 16, SAME_SIZE", "shm, 2, 32768, METRIC", "shm, 3, 16, METRIC",
        "gloo, 2, 16, METRIC", "gloo, 2, 16, SAME_SIZE", "gloo, 2, 32768, METRIC", "gloo, 2, 32768, SAME_SIZE",
        "gloo, 3, 16, METRIC", "gloo, 3, 32768, METRIC",
        "hosts, 3, 16, METRIC", "hosts, 3, 32768, SAME_SIZE"})
    void everyRankFailsNamingItsOwnCallAndThePeers(String layout, int world, int in, Other other) throws Exception {
        List<Failure> failures = mismatch(layout, world, in, other);
        long floats = 4L * in + 4 + 3; // gradients, 2 used flags, the training flag
        String bucket = String.format("allReduce(AVG) of %,d float32 elements (#", floats);
        String metric = other == Other.METRIC ? "allReduce(SUM) of 1 float32 element (#" : bucket;
        for (int r = 0; r < world; r++) {
            String m = failures.get(r).message();
            System.out.println(layout + " rank " + r + " after " + failures.get(r).millis() + " ms: " + m);
            // Its own call comes first, then that a peer called something else.
            String mine = r == 1 ? metric : bucket;
            assertTrue(m.startsWith(mine), "rank " + r + ": " + m);
            assertTrue(m.contains("a peer called a different collective"), "rank " + r + ": " + m);
            if (r == 1) {
                assertTrue(m.contains("DDP bucket 1 of 1)") && m.contains(" called " + bucket), "rank 1: " + m);
                assertTrue(!m.startsWith(bucket) || other == Other.SAME_SIZE, m);
            } else {
                assertTrue(m.startsWith(bucket) && m.indexOf("DDP bucket 1 of 1)") < m.indexOf(" called "), m);
                // The peer named is the metric rank (rank 2, if any, ran the same backward).
                assertTrue(m.contains("rank 1") && m.contains(" called " + metric), "rank " + r + ": " + m);
            }
            // The same as data: the failure's class and both calls.
            assertTrue(failures.get(r).error() instanceof CollectiveMismatchException, "rank " + r + ": "
                    + failures.get(r).error().getClass());
            CollectiveMismatchException mismatch = (CollectiveMismatchException) failures.get(r).error();
            assertEquals(r != 1, mismatch.localCall().isDdpBucket(), "rank " + r + ": " + mismatch.localCall());
            assertEquals(r != 1 || other == Other.SAME_SIZE ? floats : 1, mismatch.localCall().numel(), "rank " + r);
            if (mismatch.peerCall() != null) {
                assertEquals(r == 1, mismatch.peerCall().isDdpBucket(), "rank " + r + ": " + mismatch.peerCall());
                assertEquals(r == 1 ? 0 : 1, mismatch.peerRank(), "rank " + r);
            }
            assertEquals(r, mismatch.rank());
            // Within the group's timeout; in practice at once (a peer breaks the connections).
            assertTrue(failures.get(r).millis() < TIMEOUT.toMillis(), "rank " + r + " took "
                    + failures.get(r).millis() + " ms, the timeout is " + TIMEOUT.toMillis() + " ms");
        }
    }

    /**
     * The same two collectives, equal in op, dtype and size, issued in opposite orders: DDP's
     * bucket on one rank and a user all-reduce on the other come first. Caught by the bucket
     * index in the fingerprint. (Two user all-reduces of equal op and size swapped cannot be told
     * apart without a round trip: they are both "allReduce(AVG) of n float32 elements".)
     */
    @ParameterizedTest(name = "{0}, Linear({1}, 4)")
    @CsvSource({"shm, 16", "gloo, 16", "gloo, 32768"})
    void sameSizedCollectivesOutOfOrderAreCaught(String layout, int in) throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<Ranks.Outcome<String>> outcomes = Ranks.collect(2, LIMIT, rank -> {
            try (ProcessGroupGloo g = group(store, rank, 2, layout);
                    DistributedDataParallel ddp = new DistributedDataParallel(
                            new Linear(in, 4, true, new Generator(rank)), g, 25L << 20)) {
                Tensor user = Tensor.zeros(ddp.bucketBytes().get(0) / 4);
                try (var scope = Tensors.scope()) {
                    if (rank == 0) {
                        ddp.forward(Tensor.ones(2, in)).sum().backward();
                        g.allReduce(user, ReduceOp.AVG).await();
                    } else {
                        g.allReduce(user, ReduceOp.AVG).await();
                        ddp.forward(Tensor.ones(2, in)).sum().backward();
                    }
                } catch (RuntimeException e) {
                    DistributedException d = distributed(e);
                    assertNotNull(d, "rank " + rank + ": " + e);
                    return d.getMessage();
                } finally {
                    user.close();
                }
                return fail("rank " + rank + " went on after the collectives were swapped");
            }
        });
        for (int r = 0; r < 2; r++) {
            assertTrue(outcomes.get(r).error() == null, "rank " + r + ": " + outcomes.get(r).error());
            String m = outcomes.get(r).value();
            System.out.println(layout + " swapped, rank " + r + ": " + m);
            String ddpBucket = "DDP bucket 1 of 1)";
            // Rank 0 names its bucket first and rank 1's plain all-reduce after; rank 1 the reverse.
            int own = m.indexOf(ddpBucket);
            int called = m.indexOf(" called ");
            assertTrue(own >= 0 && called >= 0 && (r == 0 ? own < called : own > called), "rank " + r + ": " + m);
        }
    }

    /**
     * Two DDP models on every rank, their backwards run in opposite orders: bucket all-reduces of
     * different sizes meet. On Gloo's ring this used to abort the JVM (Gloo's "enforce fail ...
     * op.preamble.length <= op.nbytes" in its network thread); now both ranks fail naming both buckets.
     */
    @ParameterizedTest(name = "{0}, Linear({1}, 4) and Linear(2 x {1}, 4)")
    @CsvSource({"shm, 16", "gloo, 16", "gloo, 16384"}) // 16384: 65,540 and 131,076 floats, both on the ring
    void twoModelsBackwardInOppositeOrdersFailOnEveryRank(String layout, int in) throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<Ranks.Outcome<String>> outcomes = Ranks.collect(2, LIMIT, rank -> {
            try (ProcessGroupGloo g = group(store, rank, 2, layout);
                    DistributedDataParallel a = new DistributedDataParallel(
                            new Linear(in, 4, true, new Generator(rank)), g, 25L << 20);
                    DistributedDataParallel b = new DistributedDataParallel(
                            new Linear(2 * in, 4, true, new Generator(rank)), g, 25L << 20)) {
                try (var scope = Tensors.scope()) {
                    if (rank == 0) {
                        a.forward(Tensor.ones(2, in)).sum().backward();
                    } else {
                        b.forward(Tensor.ones(2, 2 * in)).sum().backward();
                    }
                } catch (RuntimeException e) {
                    DistributedException d = distributed(e);
                    assertNotNull(d, "rank " + rank + ": " + e);
                    return d.getMessage();
                }
                return fail("rank " + rank + " went on after the models' backwards were swapped");
            }
        });
        // Gradients, then 2 used flags and the training flag.
        String small = String.format("allReduce(AVG) of %,d float32 elements (#", 4L * in + 4 + 3);
        String large = String.format("allReduce(AVG) of %,d float32 elements (#", 8L * in + 4 + 3);
        for (int r = 0; r < 2; r++) {
            assertTrue(outcomes.get(r).error() == null, "rank " + r + ": " + outcomes.get(r).error());
            String m = outcomes.get(r).value();
            System.out.println(layout + " two models, rank " + r + ": " + m);
            assertTrue(m.startsWith(r == 0 ? small : large), "rank " + r + ": " + m);
            assertTrue(m.contains(" called " + (r == 0 ? large : small)), "rank " + r + ": " + m);
        }
    }

    /** Matched collectives still give exact results after a mismatch-free run on every path. */
    @ParameterizedTest(name = "{0}, {1} ranks, Linear({2}, 4)")
    @CsvSource({"shm, 2, 16", "gloo, 2, 16", "gloo, 2, 32768", "gloo, 3, 32768", "hosts, 3, 32768"})
    void matchedBackwardsAverageTheGradients(String layout, int world, int in) throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<Ranks.Outcome<float[]>> outcomes = Ranks.collect(world, LIMIT, rank -> {
            try (ProcessGroupGloo g = group(store, rank, world, layout);
                    DistributedDataParallel ddp = new DistributedDataParallel(
                            new Linear(in, 4, true, new Generator(0)), g, 25L << 20)) {
                try (var scope = Tensors.scope()) {
                    // d(sum(W x + b))/dW = x broadcast: rank r's input is all (r + 1).
                    ddp.forward(Tensor.full(rank + 1, org.ddp4j.tensor.DType.FLOAT32, g.device(), 1, in)).sum()
                            .backward();
                    Tensor metric = Tensor.of(new float[] {rank}, 1);
                    g.allReduce(metric, ReduceOp.SUM).await();
                    assertEquals(world * (world - 1) / 2f, metric.toFloatArray()[0], 0f);
                }
                return ddp.module().parameters().get(0).grad().toFloatArray();
            }
        });
        float mean = (world + 1) / 2f;
        for (int r = 0; r < world; r++) {
            assertTrue(outcomes.get(r).error() == null, "rank " + r + ": " + outcomes.get(r).error());
            float[] want = new float[4 * in];
            java.util.Arrays.fill(want, mean);
            assertArrayEquals(want, outcomes.get(r).value(), 1e-6f, "rank " + r);
        }
    }
}
