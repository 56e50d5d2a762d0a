package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Collectives in bfloat16 and float16 over 2 and 3 ranks (threads of this JVM, each with its own
 * group) on every CPU transport: "shm" (one host, shared memory), "gloo" (plain Gloo: the small
 * all-reduce up to 256 KiB, Gloo's ring above) and "hosts" (two pretend hosts: ranks 0-1 on A, 2 on
 * B; shared memory inside A, Gloo between the leaders). Each reduction is compared with this
 * process's float32 reduction of the widened inputs in rank order, rounded once: bit for bit where
 * the path rounds once (shared memory, the small all-reduce, a ring of two), within the documented
 * bound where a ring's partial sums travel in 16 bits (ring.h: one rounding per hop). Broadcast,
 * allGather and send/recv must move the bits unchanged. Sizes cross the small all-reduce's and the
 * shared-memory transport's chunk boundaries (64 KiB small, 512 KiB chunks) and include odd counts.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class LowPrecisionCollectivesTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int[] SIZES = {1, 7, 1001, 40_001, 200_001, 700_001};
    private static final ReduceOp[] OPS = {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT};

    private static ProcessGroupGloo group(HashStore store, int rank, int world, String layout) {
        GlooOptions options = GlooOptions.fromEnvironment(System.getenv());
        options = switch (layout) {
            case "shm" -> options.withShm(true, null);
            case "gloo" -> options.withShm(false, null);
            case "hosts" -> options.withShm(true, "low-precision-host-" + (rank < 2 ? "A" : "B"));
            default -> throw new IllegalArgumentException(layout);
        };
        return new ProcessGroupGloo(store, rank, world, TIMEOUT, "127.0.0.1", null, options);
    }

    /** Rank r's float32 input; PRODUCT gets values near 1 (no overflow over 3 ranks). */
    private static float[] values(int rank, int n, ReduceOp op, int salt) {
        float[] v = new float[n];
        long h = 0x9E3779B97F4A7C15L * (rank + 1) + salt;
        for (int i = 0; i < n; i++) {
            h ^= h << 13;
            h ^= h >>> 7;
            h ^= h << 17;
            float u = (h >>> 40) / 16777216.0f; // [0, 1)
            v[i] = op == ReduceOp.PRODUCT ? 0.5f + u : (2 * u - 1) * (1 << (int) ((h >>> 8) & 7));
        }
        return v;
    }

    private static float[] widen(Tensor low) {
        try (Tensor f = low.to(DType.FLOAT32)) {
            return f.toFloatArray();
        }
    }

    /** The float32 reduction of the widened inputs in rank order (AVG: times 1f / world), rounded once to dtype. */
    private static short[] reference(List<float[]> inputs, ReduceOp op, DType dtype, float[] absSum) {
        int n = inputs.get(0).length;
        float[] acc = inputs.get(0).clone();
        for (int i = 0; i < n; i++) {
            absSum[i] = Math.abs(acc[i]);
        }
        for (int r = 1; r < inputs.size(); r++) {
            float[] x = inputs.get(r);
            for (int i = 0; i < n; i++) {
                float a = acc[i], b = x[i];
                acc[i] = switch (op) {
                    case SUM, AVG -> a + b;
                    case PRODUCT -> a * b;
                    case MIN -> b < a ? b : a;
                    case MAX -> b > a ? b : a;
                };
                absSum[i] = op == ReduceOp.PRODUCT ? absSum[i] * Math.abs(b) : absSum[i] + Math.abs(b);
            }
        }
        if (op == ReduceOp.AVG) {
            float inv = 1.0f / inputs.size();
            for (int i = 0; i < n; i++) {
                acc[i] *= inv;
                absSum[i] *= inv;
            }
        }
        try (Tensor f = Tensor.of(acc, n); Tensor low = f.to(dtype)) {
            return low.toBitsArray();
        }
    }

    /** Whether this layout, world and size round the reduction once (see the class comment). */
    private static boolean roundsOnce(String layout, int world, int n, DType dtype) {
        return switch (layout) {
            case "shm" -> true;
            case "gloo" -> world == 2 || n * 2L <= (256 << 10);
            default -> false; // hosts: the host's reduce, then the leaders' ring
        };
    }

    @ParameterizedTest(name = "{0}, {1} ranks, {2}")
    @CsvSource({"shm, 2, BFLOAT16", "shm, 3, FLOAT16", "gloo, 2, FLOAT16", "gloo, 3, BFLOAT16", "hosts, 3, BFLOAT16",
            "shm, 3, BFLOAT16", "gloo, 3, FLOAT16"})
    void reductionsAreFloat32RoundedOnceAndCopiesMoveTheBits(String layout, int world, DType dtype) throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        // Every rank computes every rank's inputs (they are deterministic), so each checks its own results.
        List<Ranks.Outcome<String>> outcomes = Ranks.collect(world, Duration.ofSeconds(200), rank -> {
            try (ProcessGroupGloo g = group(store, rank, world, layout)) {
                int checked = 0;
                for (int n : SIZES) {
                    for (ReduceOp op : OPS) {
                        try (var scope = Tensors.scope()) {
                            List<float[]> inputs = new ArrayList<>();
                            for (int r = 0; r < world; r++) {
                                inputs.add(widen(Tensor.of(values(r, n, op, n), n).to(dtype)));
                            }
                            float[] absSum = new float[n];
                            short[] expected = reference(inputs, op, dtype, absSum);
                            Tensor mine = Tensor.of(inputs.get(rank), n).to(dtype);
                            g.allReduce(mine, op).await();
                            check("allReduce " + op + " n=" + n, mine.toBitsArray(), expected, absSum, dtype,
                                    roundsOnce(layout, world, n, dtype) || op == ReduceOp.MIN || op == ReduceOp.MAX
                                            || (op == ReduceOp.PRODUCT && world == 2), world);
                            checked++;
                        }
                    }
                    try (var scope = Tensors.scope()) {
                        ReduceOp op = ReduceOp.SUM;
                        List<float[]> inputs = new ArrayList<>();
                        for (int r = 0; r < world; r++) {
                            inputs.add(widen(Tensor.of(values(r, n, op, 7 * n), n).to(dtype)));
                        }
                        float[] absSum = new float[n];
                        short[] expected = reference(inputs, op, dtype, absSum);
                        boolean once = roundsOnce(layout, world, n, dtype);
                        // reduce to the last rank
                        Tensor mine = Tensor.of(inputs.get(rank), n).to(dtype);
                        short[] before = mine.toBitsArray();
                        g.reduce(mine, world - 1, op).await();
                        if (rank == world - 1) {
                            check("reduce n=" + n, mine.toBitsArray(), expected, absSum, dtype, once, world);
                        }
                        // reduceScatter: rank r keeps block r of the reduction of the concatenations
                        if (n % world != 0) {
                            Tensor out = Tensor.zeros(dtype, 1);
                            Tensor in = Tensor.zeros(dtype, world);
                            g.reduceScatterTensor(out, in, op).await();
                        } else {
                            int block = n / world;
                            Tensor in = Tensor.of(inputs.get(rank), n).to(dtype);
                            Tensor out = Tensor.zeros(dtype, block);
                            g.reduceScatterTensor(out, in, op).await();
                            short[] e = java.util.Arrays.copyOfRange(expected, rank * block, (rank + 1) * block);
                            float[] a = java.util.Arrays.copyOfRange(absSum, rank * block, (rank + 1) * block);
                            check("reduceScatter n=" + n, out.toBitsArray(), e, a, dtype, once, world);
                        }
                        // broadcast from rank 1, allGather, send/recv: the bits unchanged
                        Tensor b = Tensor.ofBits(before, dtype, n);
                        g.broadcast(b, 1).await();
                        short[] fromOne = Tensor.of(inputs.get(1), n).to(dtype).toBitsArray();
                        assertArrayEquals(fromOne, b.toBitsArray(), "broadcast n=" + n);
                        Tensor gathered = Tensor.zeros(dtype, (long) n * world);
                        g.allGatherIntoTensor(gathered, Tensor.ofBits(before, dtype, n)).await();
                        short[] all = gathered.toBitsArray();
                        for (int r = 0; r < world; r++) {
                            short[] theirs = Tensor.of(inputs.get(r), n).to(dtype).toBitsArray();
                            assertArrayEquals(theirs, java.util.Arrays.copyOfRange(all, r * n, (r + 1) * n),
                                    "allGather block " + r + " n=" + n);
                        }
                        if (rank == 0) {
                            g.send(Tensor.ofBits(before, dtype, n), 1, 5).await();
                        } else if (rank == 1) {
                            Tensor got = Tensor.zeros(dtype, n);
                            g.recv(got, 0, 5).await();
                            short[] zero = Tensor.of(inputs.get(0), n).to(dtype).toBitsArray();
                            assertArrayEquals(zero, got.toBitsArray(), "send/recv n=" + n);
                        }
                        checked += 4;
                    }
                }
                // int64 AVG keeps its error.
                try (var scope = Tensors.scope()) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> g.allReduce(Tensor.zeros(DType.INT64, 2), ReduceOp.AVG));
                    assertTrue(e.getMessage().contains("ReduceOp.AVG needs a floating tensor"), e.getMessage());
                }
                return "rank " + rank + " checked " + checked;
            }
        });
        for (int r = 0; r < world; r++) {
            Ranks.Outcome<String> o = outcomes.get(r);
            if (o.error() != null) {
                throw new AssertionError("rank " + r + ": " + o.error(), o.error());
            }
            assertEquals("rank " + r + " checked " + SIZES.length * (OPS.length + 4), o.value());
        }
    }

    private static void check(String what, short[] got, short[] expected, float[] absSum, DType dtype, boolean exact,
            int world) {
        if (exact) {
            for (int i = 0; i < got.length; i++) {
                if (got[i] != expected[i]) {
                    throw new AssertionError(what + ": element " + i + " is 0x" + Integer.toHexString(got[i] & 0xffff)
                            + ", expected 0x" + Integer.toHexString(expected[i] & 0xffff)
                            + " (the float32 reduction rounded once)");
                }
            }
            return;
        }
        // One rounding per hop (ring.h): each at most half an ulp of a partial sum <= sum |x|.
        float eps = dtype == DType.BFLOAT16 ? 0x1p-8f : 0x1p-11f;
        float[] g = widen(Tensor.ofBits(got, dtype, got.length));
        float[] e = widen(Tensor.ofBits(expected, dtype, expected.length));
        for (int i = 0; i < got.length; i++) {
            float bound = world * eps * absSum[i] + Math.ulp(e[i]);
            if (!(Math.abs(g[i] - e[i]) <= bound)) {
                throw new AssertionError(what + ": element " + i + " is " + g[i] + ", expected " + e[i] + " within "
                        + bound);
            }
        }
    }

    @Test
    void aSingleRankGroupReducesInPlaceAndInt64AvgIsRefused() {
        try (var group = new ProcessGroupGloo(new HashStore(), 0, 1, Duration.ofSeconds(30)); var scope = Tensors.scope()) {
            Tensor b = Tensor.of(new float[] {1.5f, -2.25f, 3f}, 3).to(DType.BFLOAT16);
            group.allReduce(b, ReduceOp.AVG).await();
            assertArrayEquals(new float[] {1.5f, -2.25f, 3f}, widen(b));
            Tensor h = Tensor.of(new float[] {0.1f, 7f}, 2).to(DType.FLOAT16);
            short[] bits = h.toBitsArray();
            group.broadcast(h, 0).await();
            assertArrayEquals(bits, h.toBitsArray());
        }
    }
}
