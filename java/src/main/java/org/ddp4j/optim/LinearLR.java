package org.ddp4j.optim;

import java.util.Map;

/**
 * Warm-up: scales each group's lr linearly from {@code startFactor * base_lr} to {@code endFactor *
 * base_lr} over {@code totalIters} steps, then keeps it. Mirrors
 * {@code torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1/3, end_factor=1.0,
 * total_iters=5)} and its recursive form. Example: {@code new LinearLR(optimizer, 0.1, 1.0, 5)}.
 */
public final class LinearLR extends LRScheduler {
    private double startFactor;
    private double endFactor;
    private int totalIters;

    /** PyTorch's defaults: start_factor 1/3, end_factor 1.0, total_iters 5. */
    public LinearLR(Optimizer optimizer) {
        this(optimizer, 1.0 / 3, 1.0, 5);
    }

    /**
     * @param startFactor the first step's multiplier of base_lr, in (0, 1]
     * @param endFactor the multiplier reached after totalIters steps, in [0, 1]
     * @param totalIters steps of the ramp, {@code >= 0}
     * @throws IllegalArgumentException e.g. "LinearLR: start_factor must be in (0, 1], got 0.0"
     */
    public LinearLR(Optimizer optimizer, double startFactor, double endFactor, int totalIters) {
        super(optimizer);
        check(startFactor, endFactor, totalIters);
        this.startFactor = startFactor;
        this.endFactor = endFactor;
        this.totalIters = totalIters;
        initialStep();
    }

    private static void check(double startFactor, double endFactor, int totalIters) {
        if (!(startFactor > 0 && startFactor <= 1)) {
            throw new IllegalArgumentException("LinearLR: start_factor must be in (0, 1], got " + startFactor);
        }
        if (!(endFactor >= 0 && endFactor <= 1)) {
            throw new IllegalArgumentException("LinearLR: end_factor must be in [0, 1], got " + endFactor);
        }
        if (totalIters < 0) {
            throw new IllegalArgumentException("LinearLR: total_iters must be non-negative, got " + totalIters);
        }
    }

    @Override
    protected double computeLr(int group, double lr, double baseLr) {
        int e = lastEpoch();
        if (e == 0) {
            return lr * startFactor;
        }
        if (e > totalIters) {
            return lr;
        }
        return lr * (1.0 + (endFactor - startFactor) / (totalIters * startFactor + (e - 1) * (endFactor - startFactor)));
    }

    @Override
    protected double closedFormLr(int group, double lr, double baseLr) {
        return baseLr * (startFactor + (endFactor - startFactor) * Math.min(totalIters, lastEpoch()) / totalIters);
    }

    @Override
    protected void putHyperParameters(Map<String, Object> out) {
        out.put("start_factor", startFactor);
        out.put("end_factor", endFactor);
        out.put("total_iters", totalIters);
    }

    @Override
    protected void loadHyperParameters(Map<String, ?> state) {
        double s = number(state, "start_factor");
        double e = number(state, "end_factor");
        int t = (int) number(state, "total_iters");
        check(s, e, t);
        startFactor = s;
        endFactor = e;
        totalIters = t;
    }
}
