package org.ddp4j.metrics;

import java.util.Arrays;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;

/**
 * Top-1 accuracy of multiclass predictions: correct / total over every rank. Mirrors
 * {@code torchmetrics.Accuracy(task="multiclass")} (micro average).
 */
public final class Accuracy extends Metric {
    private long correct;
    private long total;

    /** Over the default process group (when initialised), else this process alone. */
    public Accuracy() {
        this(null);
    }

    /** @param group the ranks to combine over, or null for the default group */
    public Accuracy(ProcessGroup group) {
        super(group);
    }

    /**
     * Counts a batch.
     *
     * @param predictions float32 logits [N, C] (the argmax counts) or int64 class indices [N]
     * @param target int64 class indices [N]
     * @throws IllegalArgumentException if the shapes or dtypes do not fit
     */
    public void update(Tensor predictions, Tensor target) {
        update(predictions, target, Math.toIntExact(target.dim() == 1 ? target.size(0) : -1));
    }

    /**
     * Counts the first {@code count} samples of a batch: on a sharded test set, the rest are the
     * sampler's padding ({@link org.ddp4j.data.DistributedSampler#unpaddedSize()}), which other ranks count.
     *
     * @throws IllegalArgumentException if the shapes or dtypes do not fit, or count is outside [0, N]
     */
    public void update(Tensor predictions, Tensor target, int count) {
        if (target.dim() != 1 || target.dtype() != DType.INT64) {
            throw new IllegalArgumentException("Accuracy: target must be int64 class indices [N], got "
                    + target.dtype() + " " + Arrays.toString(target.shape()));
        }
        long n = target.size(0);
        long[] predicted;
        if (predictions.dim() == 2 && predictions.size(0) == n) {
            predicted = predictions.argmax(1).toLongArray();
        } else if (predictions.dim() == 1 && predictions.size(0) == n && predictions.dtype() == DType.INT64) {
            predicted = predictions.toLongArray();
        } else {
            throw new IllegalArgumentException("Accuracy: predictions must be logits [N, C] or int64 classes [N] with N = "
                    + n + " (the target's), got " + predictions.dtype() + " " + Arrays.toString(predictions.shape()));
        }
        if (count < 0 || count > n) {
            throw new IllegalArgumentException("Accuracy: count " + count + " is outside the batch's 0.." + n + " samples");
        }
        long[] labels = target.toLongArray();
        for (int i = 0; i < count; i++) {
            correct += predicted[i] == labels[i] ? 1 : 0;
        }
        total += count;
    }

    @Override
    protected double[] localState() {
        return new double[] {correct, total};
    }

    /** @return correct / total, NaN when no sample was counted on any rank */
    @Override
    protected double computeFrom(double[] totals) {
        return totals[1] == 0 ? Double.NaN : totals[0] / totals[1];
    }

    @Override
    public void reset() {
        correct = 0;
        total = 0;
    }
}
