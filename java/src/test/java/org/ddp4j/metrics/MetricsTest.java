package org.ddp4j.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.ddp4j.data.DistributedSampler;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;

/** Metrics over 3 ranks with unequal (padded) shards equal one process's over the whole set. */
class MetricsTest {
    private static final int N = 10;
    private static final int CLASSES = 4;
    private static final float[] LOGITS = new Generator(5).uniform(N * CLASSES, -1f, 1f);
    /** Samples 0, 1, 2, 3, 5, 8 predicted right: 0.6, where counting the padding (0 and 1 again) would give 8/12. */
    private static final long[] LABELS = labels(0, 1, 2, 3, 5, 8);
    private static final float[] LOSS = new Generator(6).uniform(N, 0f, 3f);

    private static long[] labels(int... right) {
        long[] y = new long[N];
        for (int i = 0; i < N; i++) {
            y[i] = (argmax(i) + 1) % CLASSES;
        }
        for (int i : right) {
            y[i] = argmax(i);
        }
        return y;
    }

    private static int argmax(int row) {
        int best = 0;
        for (int c = 1; c < CLASSES; c++) {
            if (LOGITS[row * CLASSES + c] > LOGITS[row * CLASSES + best]) {
                best = c;
            }
        }
        return best;
    }

    @Test
    void threeRanksWithPaddedShardsCountEverySampleOnce() throws Exception {
        double expectedAccuracy = 0;
        double expectedLoss = 0;
        for (int i = 0; i < N; i++) {
            expectedAccuracy += argmax(i) == LABELS[i] ? 1 : 0;
            expectedLoss += LOSS[i];
        }
        expectedAccuracy /= N;
        expectedLoss /= N;
        assertEquals(0.6, expectedAccuracy, 1e-12);

        HashStore store = new HashStore(Duration.ofSeconds(30));
        List<Ranks.Outcome<double[]>> outcomes = Ranks.collect(3, rank -> {
            try (ProcessGroupGloo group = new ProcessGroupGloo(store, rank, 3, Duration.ofSeconds(30))) {
                DistributedSampler sampler = new DistributedSampler(N, 3, rank, false, 0, false);
                int[] mine = sampler.indices(); // 4 each; ranks 1 and 2 end with a padded repeat
                Accuracy accuracy = new Accuracy(group);
                MeanMetric loss = new MeanMetric(group);
                int batch = 3;
                for (int start = 0; start < mine.length; start += batch) {
                    int size = Math.min(batch, mine.length - start);
                    float[] logits = new float[size * CLASSES];
                    long[] labels = new long[size];
                    double lossSum = 0;
                    int real = Math.max(0, Math.min(size, sampler.unpaddedSize() - start));
                    for (int i = 0; i < size; i++) {
                        System.arraycopy(LOGITS, mine[start + i] * CLASSES, logits, i * CLASSES, CLASSES);
                        labels[i] = LABELS[mine[start + i]];
                        lossSum += i < real ? LOSS[mine[start + i]] : 0;
                    }
                    try (var scope = Tensors.scope()) {
                        accuracy.update(Tensor.of(logits, size, CLASSES), Tensor.ofLongs(labels, size), real);
                    }
                    if (real > 0) {
                        loss.update(lossSum / real, real);
                    }
                }
                return new double[] {accuracy.compute(), loss.compute(), sampler.unpaddedSize()};
            }
        });
        for (int r = 0; r < 3; r++) {
            assertNull(outcomes.get(r).error(), "rank " + r);
            double[] got = outcomes.get(r).value();
            assertEquals(expectedAccuracy, got[0], 1e-12, "accuracy on rank " + r);
            assertEquals(expectedLoss, got[1], 1e-6, "mean loss on rank " + r);
            assertEquals(r == 0 ? 4 : 3, (int) got[2], "rank " + r + "'s unpadded samples");
        }
    }

    @Test
    void withoutAGroupAMetricIsThisProcesssAndResets() {
        Accuracy a = new Accuracy();
        try (var scope = Tensors.scope()) {
            a.update(Tensor.ofLongs(new long[] {1, 2, 3}, 3), Tensor.ofLongs(new long[] {1, 0, 3}, 3));
        }
        assertEquals(2.0 / 3, a.compute(), 1e-15);
        a.reset();
        assertTrue(Double.isNaN(a.compute()));
        MeanMetric m = new MeanMetric();
        m.update(1, 1);
        m.update(4, 3);
        assertEquals(13.0 / 4, m.compute(), 1e-15);
        assertThrows(IllegalArgumentException.class, () -> m.update(Double.NaN));
    }

    @Test
    void badShapesAreRefusedNamingThem() {
        try (var scope = Tensors.scope()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Accuracy().update(
                    Tensor.of(new float[6], 2, 3), Tensor.ofLongs(new long[] {1, 2, 0}, 3)));
            assertTrue(e.getMessage().contains("logits [N, C] or int64 classes [N] with N = 3"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> new Accuracy().update(
                    Tensor.of(new float[6], 3, 2), Tensor.ofLongs(new long[] {1, 1, 0}, 3), 4));
            assertTrue(e.getMessage().contains("count 4 is outside the batch's 0..3 samples"), e.getMessage());
        }
    }

    @Test
    void unpaddedSizesAddUpToTheDataset() {
        for (int n : new int[] {1, 2, 7, 10, 12}) {
            for (int world : new int[] {1, 2, 3, 5}) {
                int sum = 0;
                for (int r = 0; r < world; r++) {
                    sum += new DistributedSampler(n, world, r, true, 0, false).unpaddedSize();
                }
                assertEquals(n, sum, "n " + n + " world " + world);
            }
        }
    }
}
