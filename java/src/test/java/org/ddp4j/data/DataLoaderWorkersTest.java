package org.ddp4j.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Worker threads give the batches of numWorkers = 0, in order; failures and hangs come back named. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DataLoaderWorkersTest {
    /** Features that depend on the example only, with a read slow enough that workers overtake each other. */
    private static Dataset slowDataset(int n) {
        return new Dataset() {
            @Override
            public int size() {
                return n;
            }

            @Override
            public long[] exampleShape() {
                return new long[] {3};
            }

            @Override
            public void copyFeatures(int index, float[] dst, int offset) {
                if (index % 7 == 0) {
                    Thread.onSpinWait(); // unequal work per example
                    try {
                        Thread.sleep(1);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                dst[offset] = index;
                dst[offset + 1] = index * 0.5f;
                dst[offset + 2] = -index;
            }

            @Override
            public boolean hasLabels() {
                return true;
            }

            @Override
            public long label(int index) {
                return index % 10;
            }
        };
    }

    private static List<float[]> epochs(DataLoader loader, DistributedSampler sampler, int epochs) {
        List<float[]> out = new ArrayList<>();
        for (int e = 0; e < epochs; e++) {
            sampler.setEpoch(e);
            for (Batch b : loader) {
                try (b) {
                    out.add(b.inputs().toFloatArray());
                    long[] y = b.labels().toLongArray();
                    float[] labels = new float[y.length];
                    for (int i = 0; i < y.length; i++) {
                        labels[i] = y[i];
                    }
                    out.add(labels);
                }
            }
        }
        return out;
    }

    @Test
    void fourWorkersGiveTheSameBatchesInTheSameOrderAsNone() {
        Dataset data = slowDataset(203);
        DistributedSampler s0 = new DistributedSampler(data.size(), 2, 1, true, 5, false);
        DistributedSampler s4 = new DistributedSampler(data.size(), 2, 1, true, 5, false);
        List<float[]> plain = epochs(new DataLoader(data, 8, s0, false), s0, 2);
        try (DataLoader workers = new DataLoader(data, 8, s4, false,
                DataLoader.Options.defaults().numWorkers(4).prefetchFactor(3))) {
            List<float[]> threaded = epochs(workers, s4, 2);
            assertEquals(plain.size(), threaded.size());
            for (int i = 0; i < plain.size(); i++) {
                assertArrayEquals(plain.get(i), threaded.get(i), "batch part " + i);
            }
        }
        // the shuffle changed between the epochs, so the comparison covered two orders
        assertTrue(plain.size() == 2 * 2 * 13 && !java.util.Arrays.equals(plain.get(0), plain.get(26)));
    }

    @Test
    void aBatchTakenInsideAScopeIsFreedByIt() {
        Dataset data = slowDataset(20);
        try (DataLoader loader = new DataLoader(data, 5, null, false, DataLoader.Options.defaults().numWorkers(2))) {
            long before = Tensors.nativeBytesInUse();
            try (var scope = Tensors.scope()) {
                for (Batch b : loader) {
                    assertEquals(5, b.size());
                }
            }
            assertEquals(before, Tensors.nativeBytesInUse(), "the workers' batches outlived the scope");
        }
    }

    @Test
    void aFailingDatasetNamesTheBatchAndTheCause() {
        Dataset failing = new Dataset() {
            public int size() {
                return 10;
            }

            public long[] exampleShape() {
                return new long[] {1};
            }

            public void copyFeatures(int index, float[] dst, int offset) {
                if (index == 6) {
                    throw new IllegalStateException("example 6 is corrupt");
                }
                dst[offset] = index;
            }

            public boolean hasLabels() {
                return false;
            }

            public long label(int index) {
                throw new IllegalStateException();
            }
        };
        try (DataLoader loader = new DataLoader(failing, 2, null, false, DataLoader.Options.defaults().numWorkers(2))) {
            Iterator<Batch> it = loader.iterator();
            for (int i = 0; i < 3; i++) {
                it.next().close();
            }
            IllegalStateException e = assertThrows(IllegalStateException.class, it::next);
            assertTrue(e.getMessage().contains("a worker thread failed to make batch 3")
                    && e.getMessage().contains("example 6 is corrupt"), e.getMessage());
        }
    }

    @Test
    void aHangingReadEndsAtTheTimeoutNamingTheBatch() {
        CountDownLatch never = new CountDownLatch(1);
        Dataset hanging = new Dataset() {
            public int size() {
                return 4;
            }

            public long[] exampleShape() {
                return new long[] {1};
            }

            public void copyFeatures(int index, float[] dst, int offset) {
                try {
                    never.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }

            public boolean hasLabels() {
                return false;
            }

            public long label(int index) {
                return 0;
            }
        };
        try (DataLoader loader = new DataLoader(hanging, 2, null, false,
                DataLoader.Options.defaults().numWorkers(1).timeout(Duration.ofMillis(200)))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> loader.iterator().next());
            assertTrue(e.getMessage().contains("batch 0 was not ready after PT0.2S"), e.getMessage());
        }
    }

    @Test
    void badOptionsAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DataLoader.Options.defaults().numWorkers(-1));
        assertTrue(e.getMessage().contains("numWorkers must be 0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> DataLoader.Options.defaults().prefetchFactor(0));
        assertTrue(e.getMessage().contains("prefetchFactor must be at least 1"), e.getMessage());
        // Round 3: 2^31 batches in flight overflowed into an internal NullPointerException.
        e = assertThrows(IllegalArgumentException.class,
                () -> DataLoader.Options.defaults().numWorkers(Integer.MAX_VALUE).prefetchFactor(2));
        assertTrue(e.getMessage().contains("numWorkers x prefetchFactor = 2147483647 x 2"), e.getMessage());
    }

    @Test
    void aTimeoutWithoutWorkersIsRefusedNotIgnored() {
        Dataset data = new TensorDataset(org.ddp4j.tensor.Tensor.zeros(4, 2).keep());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new DataLoader(data, 2, null,
                false, DataLoader.Options.defaults().timeout(Duration.ofSeconds(1))));
        assertTrue(e.getMessage().contains("a timeout (PT1S) needs workers"), e.getMessage());
        new DataLoader(data, 2, null, false, DataLoader.Options.defaults().timeout(Duration.ofSeconds(1)).numWorkers(1))
                .close();
    }
}
