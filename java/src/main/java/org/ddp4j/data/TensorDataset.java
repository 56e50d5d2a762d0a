package org.ddp4j.data;

import java.util.Arrays;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;

/**
 * A dataset over tensors whose first dimension indexes examples: features (float32 [N, ...]) and
 * optional labels (int64 [N]). The values are copied into Java arrays once. Mirrors
 * {@code torch.utils.data.TensorDataset}.
 */
public final class TensorDataset implements Dataset {
    private final float[] features;
    private final long[] labels;
    private final long[] exampleShape;
    private final int exampleNumel;
    private final int size;

    /**
     * @param features float32 [N, ...]
     * @param labels int64 [N], or null
     * @throws IllegalArgumentException on a wrong dtype or when the first dimensions differ
     */
    public TensorDataset(Tensor features, Tensor labels) {
        if (features.dtype() != DType.FLOAT32 || features.dim() < 1) {
            throw new IllegalArgumentException("TensorDataset features must be float32 [N, ...], got " + features.describe());
        }
        this.size = Math.toIntExact(features.size(0));
        if (labels != null && (labels.dtype() != DType.INT64 || labels.dim() != 1 || labels.size(0) != size)) {
            throw new IllegalArgumentException("TensorDataset labels must be int64 [" + size + "] to match features "
                    + Arrays.toString(features.shape()) + ", got " + labels.describe());
        }
        long[] shape = features.shape();
        this.exampleShape = Arrays.copyOfRange(shape, 1, shape.length);
        this.exampleNumel = size == 0 ? 0 : Math.toIntExact(features.numel() / size);
        this.features = features.toFloatArray();
        this.labels = labels == null ? null : labels.toLongArray();
    }

    /** A dataset of features only. */
    public TensorDataset(Tensor features) {
        this(features, null);
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public long[] exampleShape() {
        return exampleShape.clone();
    }

    @Override
    public void copyFeatures(int index, float[] dst, int offset) {
        System.arraycopy(features, Math.multiplyExact(index, exampleNumel), dst, offset, exampleNumel);
    }

    @Override
    public boolean hasLabels() {
        return labels != null;
    }

    @Override
    public long label(int index) {
        if (labels == null) {
            throw new IllegalStateException("this TensorDataset has no labels");
        }
        return labels[index];
    }
}
