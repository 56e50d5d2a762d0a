package org.ddp4j.data;

import java.util.Iterator;
import java.util.NoSuchElementException;
import org.ddp4j.tensor.Tensor;

/**
 * Iterates a {@link Dataset} in batches: PyTorch's {@code torch.utils.data.DataLoader} without
 * worker processes. Each batch's features are gathered into one Java array and copied to native
 * memory in a single call. Batches are created in the current {@link org.ddp4j.tensor.Tensors#scope()}
 * (or close them yourself).
 */
public final class DataLoader implements Iterable<Batch> {
    private final Dataset dataset;
    private final int batchSize;
    private final Sampler sampler;
    private final boolean dropLast;

    /**
     * @param sampler the visiting order (e.g. a DistributedSampler); the dataset order when null
     * @param dropLast drop a last batch smaller than batchSize
     * @throws IllegalArgumentException if batchSize < 1
     */
    public DataLoader(Dataset dataset, int batchSize, Sampler sampler, boolean dropLast) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be >= 1, got " + batchSize);
        }
        this.dataset = dataset;
        this.batchSize = batchSize;
        this.sampler = sampler == null ? new SequentialSampler(dataset.size()) : sampler;
        this.dropLast = dropLast;
    }

    /** In dataset order, keeping a short last batch. */
    public DataLoader(Dataset dataset, int batchSize) {
        this(dataset, batchSize, null, false);
    }

    /** Number of batches per epoch. Mirrors {@code len(loader)}. */
    public int size() {
        int n = sampler.size();
        return dropLast ? n / batchSize : (n + batchSize - 1) / batchSize;
    }

    public Dataset dataset() {
        return dataset;
    }

    /** Starts an epoch: asks the sampler for this epoch's order. */
    @Override
    public Iterator<Batch> iterator() {
        int[] order = sampler.indices();
        int batches = size();
        long[] exampleShape = dataset.exampleShape();
        int exampleNumel = dataset.exampleNumel();
        return new Iterator<>() {
            private int next;
            private float[] features;

            @Override
            public boolean hasNext() {
                return next < batches;
            }

            @Override
            public Batch next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                int start = next * batchSize;
                int count = Math.min(batchSize, order.length - start);
                next++;
                if (features == null || features.length < count * exampleNumel) {
                    features = new float[count * exampleNumel];
                }
                long[] labels = dataset.hasLabels() ? new long[count] : null;
                for (int i = 0; i < count; i++) {
                    int index = order[start + i];
                    dataset.copyFeatures(index, features, i * exampleNumel);
                    if (labels != null) {
                        labels[i] = dataset.label(index);
                    }
                }
                long[] shape = new long[exampleShape.length + 1];
                shape[0] = count;
                System.arraycopy(exampleShape, 0, shape, 1, exampleShape.length);
                Tensor inputs = Tensor.ofRegion(features, 0, shape);
                return new Batch(inputs, labels == null ? null : Tensor.ofLongs(labels, count));
            }
        };
    }
}
