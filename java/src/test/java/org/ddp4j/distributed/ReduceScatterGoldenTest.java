package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * reduceScatterTensor on one host (shared memory) against one process's sums, float32 and int64,
 * at 2, 3 and 4 ranks (threads), for outputs of 1, 1000 and 300,001 elements (the last ends inside
 * a step's piece), out of place and in place (the output is the rank's own block of the input);
 * an input that breaks the shape rule is refused by name.
 */
class ReduceScatterGoldenTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    /** Whole numbers, so every sum is exact in float32 whatever the order. */
    private static long value(int rank, long i) {
        return (rank + 1) * 1000L + i % 997;
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4})
    void eachRankGetsItsBlockOfTheSum(int world) throws Exception {
        Ranks.withGroups(world, TIMEOUT, (rank, group) -> {
            for (int block : new int[] {1, 1000, 300_001}) {
                long n = (long) block * world;
                long[] mine = new long[(int) n];
                float[] mineF = new float[(int) n];
                for (int i = 0; i < n; i++) {
                    mine[i] = value(rank, i);
                    mineF[i] = mine[i];
                }
                long[] expected = new long[block];
                float[] expectedF = new float[block];
                for (int i = 0; i < block; i++) {
                    for (int q = 0; q < world; q++) {
                        expected[i] += value(q, (long) rank * block + i);
                    }
                    expectedF[i] = expected[i];
                }
                Tensor out = Tensor.zeros(block);
                group.reduceScatterTensor(out, Tensor.of(mineF, n), ReduceOp.SUM).await();
                assertArrayEquals(expectedF, out.toFloatArray(), "float32, block " + block);
                Tensor outLong = Tensor.ofLongs(new long[block], block);
                group.reduceScatterTensor(outLong, Tensor.ofLongs(mine, n), ReduceOp.SUM).await();
                assertArrayEquals(expected, outLong.toLongArray(), "int64, block " + block);
                Tensor inPlace = Tensor.of(mineF, n);
                Tensor ownBlock = inPlace.flatSlice((long) rank * block, block);
                group.reduceScatterTensor(ownBlock, inPlace, ReduceOp.SUM).await();
                assertArrayEquals(expectedF, ownBlock.toFloatArray(), "in place, block " + block);
            }
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> group.reduceScatterTensor(Tensor.zeros(3), Tensor.zeros(3 * world + 1), ReduceOp.SUM));
            assertTrue(e.getMessage().contains("elements (world size x output)"), e.getMessage());
            return null;
        });
    }
}
