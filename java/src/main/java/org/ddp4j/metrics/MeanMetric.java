package org.ddp4j.metrics;

import org.ddp4j.distributed.ProcessGroup;

/**
 * The weighted mean of values over every rank, e.g. the mean loss per sample: Σ value·weight /
 * Σ weight. Mirrors {@code torchmetrics.MeanMetric}.
 */
public final class MeanMetric extends Metric {
    private double weightedSum;
    private double weights;

    /** Over the default process group (when initialised), else this process alone. */
    public MeanMetric() {
        this(null);
    }

    /** @param group the ranks to combine over, or null for the default group */
    public MeanMetric(ProcessGroup group) {
        super(group);
    }

    /** Adds a value with weight 1. */
    public void update(double value) {
        update(value, 1);
    }

    /**
     * Adds a value with a weight (e.g. a batch's mean loss with the batch's size).
     *
     * @throws IllegalArgumentException if the value is not finite or the weight is negative or not finite
     */
    public void update(double value, double weight) {
        if (!Double.isFinite(value) || !(weight >= 0) || Double.isInfinite(weight)) {
            throw new IllegalArgumentException("MeanMetric: value must be finite and weight finite and >= 0, got value "
                    + value + ", weight " + weight);
        }
        weightedSum += value * weight;
        weights += weight;
    }

    @Override
    protected double[] localState() {
        return new double[] {weightedSum, weights};
    }

    /** @return the weighted mean, NaN when nothing was added on any rank */
    @Override
    protected double computeFrom(double[] totals) {
        return totals[1] == 0 ? Double.NaN : totals[0] / totals[1];
    }

    @Override
    public void reset() {
        weightedSum = 0;
        weights = 0;
    }
}
