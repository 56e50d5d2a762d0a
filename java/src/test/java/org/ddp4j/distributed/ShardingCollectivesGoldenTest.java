package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The two collectives sharding lives on, in every floating dtype, against one process's results:
 * allGatherIntoTensor puts rank r's input at block r (the bits), and reduceScatterTensor leaves
 * each rank its block of the sum (exact: small whole numbers, exact in bf16 and fp16 too) and of
 * the average (within the dtype's rounding), at 2, 3 and 4 ranks for outputs of 1 and 1000
 * elements and at 2 ranks for outputs of 10^7. An all-gather output of the wrong size is refused
 * by name.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ShardingCollectivesGoldenTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    private static final DType[] FLOATING = {DType.FLOAT32, DType.BFLOAT16, DType.FLOAT16};

    /** Rank r's element i: a whole number in [0, 16), so sums of up to 4 ranks are exact in every dtype. */
    private static float value(int rank, long i) {
        return (float) ((i * 7 + rank * 5) % 16);
    }

    private static Tensor input(int rank, long n, DType dtype) {
        float[] values = new float[Math.toIntExact(n)];
        for (int i = 0; i < values.length; i++) {
            values[i] = value(rank, i);
        }
        Tensor f = Tensor.of(values, n).keep();
        if (dtype == DType.FLOAT32) {
            return f;
        }
        try (f) {
            return f.to(dtype).keep();
        }
    }

    private static void check(int world, int rank, ProcessGroup group, long block, DType dtype) {
        long n = block * world;
        try (Tensor in = input(rank, n, dtype);
                Tensor gathered = Tensor.zeros(dtype, world * block).keep();
                Tensor sum = Tensor.zeros(dtype, block).keep();
                Tensor avg = Tensor.zeros(dtype, block).keep();
                Tensor mine = in.flatSlice(0, block)) {
            group.allGatherIntoTensor(gathered, mine).await();
            float[] all = gathered.toFloatArray();
            for (int r = 0; r < world; r++) {
                for (long i = 0; i < block; i++) {
                    if (all[(int) (r * block + i)] != value(r, i)) {
                        assertEquals(value(r, i), all[(int) (r * block + i)],
                                dtype + " all-gather: block " + r + " element " + i + " of " + block);
                    }
                }
            }
            group.reduceScatterTensor(sum, in, ReduceOp.SUM).await();
            group.reduceScatterTensor(avg, in, ReduceOp.AVG).await();
            float[] s = sum.toFloatArray();
            float[] a = avg.toFloatArray();
            double tolerance = dtype == DType.FLOAT32 ? 1e-6 : dtype == DType.FLOAT16 ? 1e-3 : 8e-3;
            for (int i = 0; i < block; i++) {
                float expected = 0;
                for (int q = 0; q < world; q++) {
                    expected += value(q, rank * block + i);
                }
                if (s[i] != expected) {
                    assertEquals(expected, s[i], dtype + " reduce-scatter SUM: element " + i + " of " + block);
                }
                double mean = expected / world;
                if (Math.abs(a[i] - mean) > tolerance * Math.max(1, Math.abs(mean))) {
                    assertEquals(mean, a[i], tolerance * Math.max(1, Math.abs(mean)),
                            dtype + " reduce-scatter AVG: element " + i + " of " + block);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4})
    void everyDtypeGathersAndReducesAsOneProcess(int world) throws Exception {
        Ranks.withGroups(world, TIMEOUT, (rank, group) -> {
            for (DType dtype : FLOATING) {
                for (long block : new long[] {1, 1000}) {
                    check(world, rank, group, block, dtype);
                }
            }
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> group.allGatherIntoTensor(Tensor.zeros(3 * world + 1), Tensor.zeros(3)));
            assertTrue(e.getMessage().contains("elements (world size x input)"), e.getMessage());
            return null;
        });
    }

    @Test
    void outputsOfTenMillionElements() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            for (DType dtype : new DType[] {DType.FLOAT32, DType.BFLOAT16}) {
                check(2, rank, group, 10_000_000, dtype);
            }
            return null;
        });
    }
}
