package org.ddp4j.optim;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs schedulers one after another: the first until epoch {@code milestones[0]}, the second from
 * there (restarted at its epoch 0) until {@code milestones[1]}, and so on. Mirrors
 * {@code torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers, milestones)} (PyTorch 1.13's
 * semantics: at construction every group's lr goes back to its initial lr, the step each part's
 * constructor made is undone and the first part's is made again; at a milestone the next part jumps to
 * its epoch 0 by its closed form, PyTorch's {@code scheduler.step(0)}). Warm-up then cosine decay:
 * <pre>{@code
 * new SequentialLR(opt, List.of(new LinearLR(opt, 0.01, 1.0, warmup),
 *         new CosineAnnealingLR(opt, total - warmup, minLr)), new int[] {warmup});
 * }</pre>
 * Step only the SequentialLR, not its parts.
 */
public final class SequentialLR extends LRScheduler {
    private final List<LRScheduler> schedulers;
    private int[] milestones;
    private int lastEpoch;
    private List<Double> lastLrs;

    /**
     * @param schedulers the parts, in order, each made on {@code optimizer}
     * @param milestones the epochs at which the next part takes over, one fewer than the parts
     * @throws IllegalArgumentException if a part belongs to another optimizer, or the number of milestones is
     *     not the number of parts minus one (PyTorch's messages), or there are no parts
     */
    public SequentialLR(Optimizer optimizer, List<? extends LRScheduler> schedulers, int[] milestones) {
        super(check(optimizer, schedulers, milestones));
        this.schedulers = List.copyOf(schedulers);
        this.milestones = milestones.clone();
        this.lastEpoch = 0;
        List<ParamGroup> groups = optimizer.paramGroups();
        for (int i = 0; i < groups.size(); i++) {
            groups.get(i).setLr(baseLrs().get(i)); // group["lr"] = group["initial_lr"]
        }
        this.schedulers.forEach(LRScheduler::undoInitialStep);
        this.schedulers.get(0).redoInitialStep();
        this.lastLrs = this.schedulers.get(0).getLastLr();
    }

    private static Optimizer check(Optimizer optimizer, List<? extends LRScheduler> schedulers, int[] milestones) {
        if (schedulers.isEmpty()) {
            throw new IllegalArgumentException("SequentialLR: give at least one scheduler");
        }
        for (int i = 0; i < schedulers.size(); i++) {
            if (schedulers.get(i).optimizer() != optimizer) {
                throw new IllegalArgumentException("Sequential Schedulers expects all schedulers to belong to the same"
                        + " optimizer, but got schedulers at index " + i + " to be different than the optimizer passed in.");
            }
            if (schedulers.get(i) instanceof SequentialLR) {
                throw new IllegalArgumentException("SequentialLR: scheduler " + i + " is itself a SequentialLR; give its"
                        + " parts and milestones to one SequentialLR");
            }
        }
        if (milestones.length != schedulers.size() - 1) {
            throw new IllegalArgumentException("Sequential Schedulers expects number of schedulers provided to be one more"
                    + " than the number of milestone points, but got number of schedulers " + schedulers.size()
                    + " and the number of milestones to be equal to " + milestones.length);
        }
        return optimizer;
    }

    /** Advances one epoch: the part whose range holds the new epoch steps (restarting at epoch 0 on its milestone). */
    @Override
    public void step() {
        lastEpoch++;
        int idx = bisectRight(milestones, lastEpoch);
        LRScheduler scheduler = schedulers.get(idx);
        if (idx > 0 && milestones[idx - 1] == lastEpoch) {
            scheduler.stepTo(0);
        } else {
            scheduler.step();
        }
        lastLrs = scheduler.getLastLr();
    }

    private static int bisectRight(int[] sorted, int value) {
        int i = 0;
        while (i < sorted.length && sorted[i] <= value) {
            i++;
        }
        return i;
    }

    @Override
    public List<Double> getLastLr() {
        return lastLrs;
    }

    @Override
    public int lastEpoch() {
        return lastEpoch;
    }

    /** The parts, in order. */
    public List<LRScheduler> schedulers() {
        return schedulers;
    }

    /** The milestones (a copy). */
    public int[] milestones() {
        return milestones.clone();
    }

    /** Not used: {@link #step()} delegates to the parts. */
    @Override
    protected double computeLr(int group, double currentLr, double baseLr) {
        throw new UnsupportedOperationException("SequentialLR delegates each step to one of its schedulers");
    }

    /**
     * PyTorch's keys: {@code _milestones}, {@code last_epoch}, {@code _last_lr} and {@code _schedulers}, the
     * parts' state dicts in order.
     */
    @Override
    public Map<String, Object> stateDict() {
        Map<String, Object> out = new LinkedHashMap<>();
        List<Integer> ms = new ArrayList<>();
        for (int m : milestones) {
            ms.add(m);
        }
        out.put("_milestones", ms);
        out.put("last_epoch", lastEpoch);
        out.put("_last_lr", lastLrs);
        List<Map<String, Object>> parts = new ArrayList<>();
        schedulers.forEach(s -> parts.add(s.stateDict()));
        out.put("_schedulers", parts);
        return out;
    }

    /**
     * Restores {@link #stateDict()}: its own position and each part's.
     *
     * @throws IllegalArgumentException naming what is missing or malformed (the parts' checks included), or a
     *     number of parts or milestones other than this SequentialLR's
     */
    @Override
    public void loadStateDict(Map<String, ?> state) {
        int newLastEpoch = (int) number(state, "last_epoch");
        if (!(state.get("_schedulers") instanceof List<?> parts && parts.size() == schedulers.size()
                && parts.stream().allMatch(Map.class::isInstance))) {
            throw new IllegalArgumentException("SequentialLR.loadStateDict: the state dict has no '_schedulers' list of "
                    + schedulers.size() + " state dicts (got " + state.get("_schedulers") + ")");
        }
        if (!(state.get("_milestones") instanceof List<?> ms && ms.size() == milestones.length
                && ms.stream().allMatch(Number.class::isInstance))) {
            throw new IllegalArgumentException("SequentialLR.loadStateDict: the state dict has no '_milestones' list of "
                    + milestones.length + " numbers (got " + state.get("_milestones") + ")");
        }
        if (!(state.get("_last_lr") instanceof List<?> lrs && lrs.stream().allMatch(Number.class::isInstance)
                && lrs.size() == optimizer().paramGroups().size())) {
            throw new IllegalArgumentException("SequentialLR.loadStateDict: the state dict has no '_last_lr' list, one"
                    + " number per parameter group (got " + state.get("_last_lr") + ")");
        }
        for (int i = 0; i < parts.size(); i++) {
            @SuppressWarnings("unchecked")
            Map<String, ?> part = (Map<String, ?>) parts.get(i);
            schedulers.get(i).loadStateDict(part);
        }
        int[] newMilestones = new int[ms.size()];
        for (int i = 0; i < newMilestones.length; i++) {
            newMilestones[i] = ((Number) ms.get(i)).intValue();
        }
        List<Double> newLastLrs = new ArrayList<>();
        lrs.forEach(n -> newLastLrs.add(((Number) n).doubleValue()));
        milestones = newMilestones;
        lastEpoch = newLastEpoch;
        lastLrs = List.copyOf(newLastLrs);
    }

    @Override
    protected void putHyperParameters(Map<String, Object> out) {}

    @Override
    protected void loadHyperParameters(Map<String, ?> state) {}
}
