package org.ddp4j.optim;

import java.util.Map;

/**
 * Anneals each parameter group's lr from its base value to {@code etaMin} along half a cosine over {@code tMax}
 * epochs (then back up, periodically, as PyTorch's). Mirrors
 * {@code torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max, eta_min=0)}, with its
 * recursive form: lr_e = eta_min + (lr_{e-1} - eta_min) (1 + cos(pi e / T_max)) / (1 + cos(pi (e-1) / T_max)).
 * Example: {@code new CosineAnnealingLR(optimizer, epochs)}.
 */
public final class CosineAnnealingLR extends LRScheduler {
    private int tMax;
    private double etaMin;

    /** {@code CosineAnnealingLR(optimizer, T_max)} with eta_min 0. */
    public CosineAnnealingLR(Optimizer optimizer, int tMax) {
        this(optimizer, tMax, 0);
    }

    /**
     * @param tMax epochs of half a period, {@code >= 1}
     * @param etaMin the minimum lr, finite and {@code >= 0}
     * @throws IllegalArgumentException "CosineAnnealingLR: T_max must be at least 1, got 0"; "CosineAnnealingLR:
     *     eta_min must be a finite number >= 0 ..., got -0.1 ..." (PyTorch takes any eta_min, and the lr then turns
     *     negative or NaN later)
     */
    public CosineAnnealingLR(Optimizer optimizer, int tMax, double etaMin) {
        super(optimizer);
        check(tMax);
        checkEtaMin("CosineAnnealingLR", etaMin);
        this.tMax = tMax;
        this.etaMin = etaMin;
        initialStep();
    }

    private static void check(int tMax) {
        if (tMax < 1) {
            throw new IllegalArgumentException("CosineAnnealingLR: T_max must be at least 1, got " + tMax);
        }
    }

    private static void checkEtaMin(String where, double etaMin) {
        if (!(etaMin >= 0) || Double.isInfinite(etaMin)) {
            throw new IllegalArgumentException(where + ": eta_min must be a finite number >= 0 (the lr the schedule"
                    + " anneals to), got " + etaMin + ", which would make the lr " + (Double.isNaN(etaMin) ? "NaN"
                    : etaMin < 0 ? "negative" : "infinite") + " as it nears eta_min; pass eta_min 0 to anneal to 0");
        }
    }

    @Override
    protected double computeLr(int group, double lr, double baseLr) {
        int e = lastEpoch();
        if (e == 0) {
            return lr;
        }
        if (Math.floorMod(e - 1 - tMax, 2 * tMax) == 0) {
            return lr + (baseLr - etaMin) * (1 - Math.cos(Math.PI / tMax)) / 2;
        }
        return (1 + Math.cos(Math.PI * e / tMax)) / (1 + Math.cos(Math.PI * (e - 1) / tMax)) * (lr - etaMin) + etaMin;
    }

    @Override
    protected double closedFormLr(int group, double lr, double baseLr) {
        return etaMin + (baseLr - etaMin) * (1 + Math.cos(Math.PI * lastEpoch() / tMax)) / 2;
    }

    @Override
    protected void putHyperParameters(Map<String, Object> out) {
        out.put("T_max", tMax);
        out.put("eta_min", etaMin);
    }

    @Override
    protected void loadHyperParameters(Map<String, ?> state) {
        int newTMax = (int) number(state, "T_max");
        double newEtaMin = number(state, "eta_min");
        check(newTMax);
        checkEtaMin("CosineAnnealingLR.loadStateDict", newEtaMin);
        tMax = newTMax;
        etaMin = newEtaMin;
    }
}
