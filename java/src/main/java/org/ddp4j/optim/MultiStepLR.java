package org.ddp4j.optim;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Multiplies each group's lr by {@code gamma} at each milestone epoch (a milestone listed twice multiplies
 * by gamma²). Mirrors {@code torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones, gamma=0.1)}.
 * Example: {@code new MultiStepLR(optimizer, List.of(30, 80), 0.1)}.
 */
public final class MultiStepLR extends LRScheduler {
    /** Milestone epoch -> how many times it was listed (PyTorch's Counter). */
    private Map<Integer, Integer> milestones;
    private double gamma;

    /** {@code MultiStepLR(optimizer, milestones)} with gamma 0.1. */
    public MultiStepLR(Optimizer optimizer, List<Integer> milestones) {
        this(optimizer, milestones, 0.1);
    }

    /**
     * @param milestones epochs at which to decay (any order; negative ones never trigger, as in PyTorch)
     * @param gamma multiplicative factor of the decay, finite and {@code >= 0} (0 sets the lr to 0 at the first milestone)
     * @throws IllegalArgumentException "MultiStepLR: gamma must be a finite number >= 0 ..., got -0.5 ..." for a
     *     negative, NaN or infinite gamma (PyTorch takes any gamma)
     */
    public MultiStepLR(Optimizer optimizer, List<Integer> milestones, double gamma) {
        super(optimizer);
        checkGamma("MultiStepLR", gamma);
        this.milestones = count(milestones);
        this.gamma = gamma;
        initialStep();
    }

    private static Map<Integer, Integer> count(List<? extends Number> milestones) {
        Map<Integer, Integer> counts = new TreeMap<>();
        for (Number m : milestones) {
            counts.merge(m.intValue(), 1, Integer::sum);
        }
        return counts;
    }

    @Override
    protected double computeLr(int group, double lr, double baseLr) {
        Integer times = milestones.get(lastEpoch());
        return times == null ? lr : lr * Math.pow(gamma, times);
    }

    @Override
    protected double closedFormLr(int group, double lr, double baseLr) {
        int passed = 0; // bisect_right(sorted milestones, last_epoch)
        for (int m : milestones()) {
            passed += m <= lastEpoch() ? 1 : 0;
        }
        return baseLr * Math.pow(gamma, passed);
    }

    /** The milestones, sorted, each as often as it was given. */
    public List<Integer> milestones() {
        List<Integer> out = new ArrayList<>();
        milestones.forEach((m, times) -> {
            for (int i = 0; i < times; i++) {
                out.add(m);
            }
        });
        return out;
    }

    @Override
    protected void putHyperParameters(Map<String, Object> out) {
        out.put("milestones", milestones());
        out.put("gamma", gamma);
    }

    @Override
    protected void loadHyperParameters(Map<String, ?> state) {
        if (!(state.get("milestones") instanceof List<?> list) || !list.stream().allMatch(Number.class::isInstance)) {
            throw new IllegalArgumentException("MultiStepLR.loadStateDict: the state dict has no 'milestones' list of"
                    + " numbers (a state dict of another scheduler?)");
        }
        double newGamma = number(state, "gamma");
        checkGamma("MultiStepLR.loadStateDict", newGamma);
        List<Number> numbers = new ArrayList<>();
        list.forEach(m -> numbers.add((Number) m));
        milestones = count(numbers);
        gamma = newGamma;
    }
}
