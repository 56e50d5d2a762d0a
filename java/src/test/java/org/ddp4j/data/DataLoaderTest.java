package org.ddp4j.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

class DataLoaderTest {

    private static TensorDataset dataset(int n) {
        float[] x = new float[n * 2];
        long[] y = new long[n];
        for (int i = 0; i < n; i++) {
            x[2 * i] = i;
            x[2 * i + 1] = -i;
            y[i] = 100 + i;
        }
        try (var scope = Tensors.scope()) {
            return new TensorDataset(Tensor.of(x, n, 2), Tensor.ofLongs(y, n));
        }
    }

    @Test
    void batchesFollowTheSamplerAndKeepTheShortLastBatch() {
        Sampler reversed = new Sampler() {
            @Override
            public int[] indices() {
                return new int[] {4, 3, 2, 1, 0};
            }

            @Override
            public int size() {
                return 5;
            }
        };
        DataLoader loader = new DataLoader(dataset(5), 2, reversed, false);
        assertEquals(3, loader.size());
        List<long[]> labels = new ArrayList<>();
        try (var scope = Tensors.scope()) {
            for (Batch b : loader) {
                labels.add(b.labels().toLongArray());
                assertEquals(b.size() * 2, b.inputs().numel());
                float[] x = b.inputs().toFloatArray();
                long[] y = b.labels().toLongArray();
                for (int i = 0; i < b.size(); i++) {
                    assertEquals(y[i] - 100, x[2 * i]); // features travel with their label
                }
            }
        }
        assertArrayEquals(new long[] {104, 103}, labels.get(0));
        assertArrayEquals(new long[] {100}, labels.get(2));
    }

    @Test
    void dropLastDropsTheShortBatch() {
        DataLoader loader = new DataLoader(dataset(5), 2, null, true);
        assertEquals(2, loader.size());
        int batches = 0;
        try (var scope = Tensors.scope()) {
            for (Batch b : loader) {
                assertEquals(2, b.size());
                batches++;
            }
        }
        assertEquals(2, batches);
    }

    @Test
    void unlabelledDatasetGivesNullLabels() {
        try (var scope = Tensors.scope()) {
            TensorDataset ds = new TensorDataset(Tensor.of(new float[] {1, 2, 3, 4}, 2, 2));
            Batch b = new DataLoader(ds, 1).iterator().next();
            assertArrayEquals(new long[] {1, 2}, b.inputs().shape());
            assertArrayEquals(new float[] {1, 2}, b.inputs().toFloatArray());
            assertNull(b.labels());
        }
    }
}
