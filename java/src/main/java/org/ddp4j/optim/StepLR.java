package org.ddp4j.optim;

import java.util.Map;

/**
 * Multiplies each parameter group's lr by {@code gamma} every {@code stepSize} epochs. Mirrors
 * {@code torch.optim.lr_scheduler.StepLR(optimizer, step_size, gamma=0.1)}: lr at epoch e is
 * {@code base_lr * gamma^floor(e / step_size)}.
 * Example: {@code var scheduler = new StepLR(optimizer, 30, 0.1); ... scheduler.step();}
 */
public final class StepLR extends LRScheduler {
    private int stepSize;
    private double gamma;

    /** {@code StepLR(optimizer, step_size)} with gamma 0.1. */
    public StepLR(Optimizer optimizer, int stepSize) {
        this(optimizer, stepSize, 0.1);
    }

    /**
     * @param stepSize period of the decay in epochs, {@code >= 1}
     * @param gamma multiplicative factor of the decay, finite and {@code >= 0} (0 sets the lr to 0 at the first decay)
     * @throws IllegalArgumentException "StepLR: step_size must be at least 1, got 0"; "StepLR: gamma must be a
     *     finite number >= 0 ..., got -0.5 ..." for a negative, NaN or infinite gamma (PyTorch takes any gamma)
     */
    public StepLR(Optimizer optimizer, int stepSize, double gamma) {
        super(optimizer);
        check(stepSize);
        checkGamma("StepLR", gamma);
        this.stepSize = stepSize;
        this.gamma = gamma;
        initialStep();
    }

    private static void check(int stepSize) {
        if (stepSize < 1) {
            throw new IllegalArgumentException("StepLR: step_size must be at least 1, got " + stepSize);
        }
    }

    @Override
    protected double computeLr(int group, double lr, double baseLr) {
        int e = lastEpoch();
        return e == 0 || e % stepSize != 0 ? lr : lr * gamma;
    }

    @Override
    protected double closedFormLr(int group, double lr, double baseLr) {
        return baseLr * Math.pow(gamma, Math.floorDiv(lastEpoch(), stepSize));
    }

    @Override
    protected void putHyperParameters(Map<String, Object> out) {
        out.put("step_size", stepSize);
        out.put("gamma", gamma);
    }

    @Override
    protected void loadHyperParameters(Map<String, ?> state) {
        int newStepSize = (int) number(state, "step_size");
        double newGamma = number(state, "gamma");
        check(newStepSize);
        checkGamma("StepLR.loadStateDict", newGamma);
        stepSize = newStepSize;
        gamma = newGamma;
    }
}
