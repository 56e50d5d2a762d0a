package org.ddp4j.optim;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Changes the learning rate of every parameter group of an optimizer as training goes on. Mirrors
 * {@code torch.optim.lr_scheduler._LRScheduler} (PyTorch 1.13): construction records each
 * group's lr as {@code base_lrs} (one per group), sets {@code last_epoch} to 0 and applies the
 * schedule's first value; each {@link #step()} (once per epoch, after the epoch's
 * {@code optimizer.step()} calls) advances {@code last_epoch} and sets each group's lr from its
 * own current and base lr. Subclasses compute the next lr with PyTorch's own (chainable)
 * formulas, so the sequences match PyTorch's to the last bits.
 *
 * <p>Base lrs are PyTorch's {@code initial_lr}: the first scheduler made on an optimizer records each
 * group's lr, and later ones on the same optimizer start from that value, not from the lr the
 * earlier scheduler set (so {@link SequentialLR}'s parts share one base).
 */
public abstract class LRScheduler {
    private final Optimizer optimizer;
    private List<Double> baseLrs;
    private int lastEpoch;
    private int stepCount;
    private List<Double> lastLrs = List.of();

    /** Starts the schedule at epoch 0 from each group's current lr (PyTorch's {@code last_epoch=-1}). */
    protected LRScheduler(Optimizer optimizer) {
        this.optimizer = optimizer;
        List<Double> initial = new ArrayList<>();
        optimizer.paramGroups().forEach(g -> initial.add(g.initialLrOrSet()));
        this.baseLrs = List.copyOf(initial);
        this.lastEpoch = -1;
    }

    private List<Double> groupLrs() {
        List<Double> out = new ArrayList<>();
        optimizer.paramGroups().forEach(g -> out.add(g.lr()));
        return List.copyOf(out);
    }

    /** Subclasses call this last in their constructor: PyTorch's {@code _initial_step()}. */
    protected final void initialStep() {
        step();
    }

    /**
     * Group {@code group}'s lr for epoch {@link #lastEpoch()} given its current lr and its base lr
     * (PyTorch's {@code get_lr()} with its chainable form, for entry {@code group} of {@code param_groups}).
     */
    protected abstract double computeLr(int group, double currentLr, double baseLr);

    /**
     * Group {@code group}'s lr at epoch {@link #lastEpoch()} from its base lr alone: PyTorch's
     * {@code _get_closed_form_lr()}, which {@code step(epoch)} uses (as {@link SequentialLR} does at a
     * milestone). Schedulers without a closed form in PyTorch keep this default, {@link #computeLr}.
     */
    protected double closedFormLr(int group, double currentLr, double baseLr) {
        return computeLr(group, currentLr, baseLr);
    }

    /**
     * Advances one epoch and sets every group's lr. Mirrors {@code scheduler.step()}.
     *
     * @throws IllegalStateException if groups were added to the optimizer after the scheduler was made
     */
    public void step() {
        List<ParamGroup> groups = checkedGroups();
        stepCount++;
        lastEpoch++;
        for (int i = 0; i < groups.size(); i++) {
            ParamGroup g = groups.get(i);
            g.setLr(computeLr(i, g.lr(), baseLrs.get(i)));
        }
        lastLrs = groupLrs();
    }

    /**
     * Jumps to {@code epoch} and sets every group's lr from the closed form ({@link #closedFormLr}).
     * PyTorch's deprecated {@code scheduler.step(epoch)}; {@link SequentialLR} restarts a part with it.
     */
    void stepTo(int epoch) {
        List<ParamGroup> groups = checkedGroups();
        stepCount++;
        lastEpoch = epoch;
        for (int i = 0; i < groups.size(); i++) {
            ParamGroup g = groups.get(i);
            g.setLr(closedFormLr(i, g.lr(), baseLrs.get(i)));
        }
        lastLrs = groupLrs();
    }

    /** {@code scheduler.last_epoch -= 1}: SequentialLR undoes the step each part's constructor made. */
    void undoInitialStep() {
        lastEpoch--;
    }

    /** PyTorch's {@code _initial_step()} again (the step count restarts): SequentialLR's first part. */
    void redoInitialStep() {
        stepCount = 0;
        step();
    }

    private List<ParamGroup> checkedGroups() {
        List<ParamGroup> groups = optimizer.paramGroups();
        if (groups.size() != baseLrs.size()) {
            throw new IllegalStateException(getClass().getSimpleName() + " was made for " + baseLrs.size()
                    + " parameter groups but the optimizer now has " + groups.size() + " (make the scheduler after"
                    + " adding the groups)");
        }
        return groups;
    }

    /** The lr that the last {@link #step()} set, one per parameter group. Mirrors {@code get_last_lr()}. */
    public List<Double> getLastLr() {
        return lastLrs;
    }

    /** The number of {@link #step()}s after construction's; 0 right after construction. Mirrors {@code last_epoch}. */
    public int lastEpoch() {
        return lastEpoch;
    }

    /** The first group's lr when the schedule started. Mirrors {@code base_lrs[0]}. */
    public double baseLr() {
        return baseLrs.get(0);
    }

    /** Each group's lr when the schedule started. Mirrors {@code base_lrs}. */
    public List<Double> baseLrs() {
        return baseLrs;
    }

    /** The optimizer whose lr this schedules. */
    public Optimizer optimizer() {
        return optimizer;
    }

    /**
     * The schedule's position and hyper-parameters under PyTorch's names: {@code last_epoch},
     * {@code base_lrs} and {@code _last_lr} (one per group), {@code _step_count} and the
     * subclass's (e.g. {@code step_size}, {@code gamma}). Values are Integer, Double, List or Map
     * (JSON-friendly). Mirrors {@code scheduler.state_dict()}.
     */
    public Map<String, Object> stateDict() {
        Map<String, Object> out = new LinkedHashMap<>();
        putHyperParameters(out);
        out.put("base_lrs", baseLrs);
        out.put("last_epoch", lastEpoch);
        out.put("_step_count", stepCount);
        out.put("_last_lr", lastLrs);
        return out;
    }

    /**
     * Restores a state from {@link #stateDict()} (e.g. read back from JSON: numbers of any boxed
     * type). It does not change the optimizer's lr, as in PyTorch: load the optimizer's state dict too.
     * Mirrors {@code scheduler.load_state_dict(state_dict)}.
     *
     * @throws IllegalArgumentException naming the missing or malformed key, or lists of
     *     {@code base_lrs} / {@code _last_lr} whose length is not the optimizer's group count; nothing changes then
     */
    public void loadStateDict(Map<String, ?> state) {
        int newLastEpoch = (int) number(state, "last_epoch");
        int newStepCount = (int) number(state, "_step_count");
        List<Double> newBaseLrs = perGroup(state, "base_lrs");
        List<Double> newLastLrs = perGroup(state, "_last_lr");
        loadHyperParameters(state);
        lastEpoch = newLastEpoch;
        stepCount = newStepCount;
        baseLrs = newBaseLrs;
        lastLrs = newLastLrs;
    }

    /** Adds the subclass's hyper-parameters under PyTorch's attribute names. */
    protected abstract void putHyperParameters(Map<String, Object> out);

    /** Validates, then takes the subclass's hyper-parameters from a state dict. */
    protected abstract void loadHyperParameters(Map<String, ?> state);

    /**
     * Refuses a decay factor that would make a later {@link #step()} set an invalid lr: PyTorch takes any
     * gamma and fails (or trains on NaN) only later, naming neither the scheduler nor gamma. Gamma 0
     * (the lr drops to 0) and gamma above 1 (the lr grows) are accepted, as in PyTorch.
     *
     * @param where e.g. "StepLR" or "StepLR.loadStateDict"
     * @throws IllegalArgumentException "StepLR: gamma must be a finite number >= 0 ..., got -0.5 ..." if gamma is
     *     negative, NaN or infinite
     */
    protected static void checkGamma(String where, double gamma) {
        if (!(gamma >= 0) || Double.isInfinite(gamma)) {
            String lr = Double.isNaN(gamma) ? "NaN" : gamma < 0 ? "negative" : "infinite";
            throw new IllegalArgumentException(where + ": gamma must be a finite number >= 0 (the factor each decay"
                    + " multiplies the lr by), got " + gamma + ", which would make the lr " + lr + " at the first decay;"
                    + " pass a gamma in [0, 1) to decay the lr, e.g. 0.1 to divide it by 10");
        }
    }

    /** {@code state[key]} as a number, or an error naming the key. */
    protected final double number(Map<String, ?> state, String key) {
        if (!(state.get(key) instanceof Number n)) {
            throw new IllegalArgumentException(getClass().getSimpleName() + ".loadStateDict: the state dict has no number '"
                    + key + "' (a state dict of another scheduler?)");
        }
        return n.doubleValue();
    }

    private List<Double> perGroup(Map<String, ?> state, String key) {
        int groups = optimizer.paramGroups().size();
        if (!(state.get(key) instanceof List<?> list && list.size() == groups
                && list.stream().allMatch(Number.class::isInstance))) {
            throw new IllegalArgumentException(getClass().getSimpleName() + ".loadStateDict: the state dict has no '" + key
                    + "' list of " + groups + (groups == 1 ? " number" : " numbers") + ", one per parameter group of the"
                    + " optimizer (got " + state.get(key) + ")");
        }
        List<Double> out = new ArrayList<>();
        list.forEach(n -> out.add(((Number) n).doubleValue()));
        return List.copyOf(out);
    }
}
