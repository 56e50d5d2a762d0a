package org.ddp4j.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Changes an optimizer's learning rate as training goes on. Mirrors
 * {@code torch.optim.lr_scheduler._LRScheduler} (PyTorch 1.13): construction records the
 * optimizer's lr as {@code base_lrs}, sets {@code last_epoch} to 0 and applies the schedule's
 * first value; each {@link #step()} (once per epoch, after the epoch's {@code optimizer.step()}
 * calls) advances {@code last_epoch} and sets the optimizer's lr. Subclasses compute the next lr
 * from the current one with PyTorch's own (chainable) formulas, so the sequences match PyTorch's
 * to the last bits.
 */
public abstract class LRScheduler {
    private final Optimizer optimizer;
    private double baseLr;
    private int lastEpoch;
    private int stepCount;
    private double lastLr;

    /** Starts the schedule at epoch 0 from the optimizer's current lr (PyTorch's {@code last_epoch=-1}). */
    protected LRScheduler(Optimizer optimizer) {
        this.optimizer = optimizer;
        this.baseLr = optimizer.lr();
        this.lastEpoch = -1;
    }

    /** Subclasses call this last in their constructor: PyTorch's {@code _initial_step()}. */
    protected final void initialStep() {
        step();
    }

    /**
     * The lr for epoch {@link #lastEpoch()} given the optimizer's current lr (PyTorch's
     * {@code get_lr()} with its chainable form).
     */
    protected abstract double computeLr(double currentLr);

    /** Advances one epoch and sets the optimizer's lr. Mirrors {@code scheduler.step()}. */
    public void step() {
        stepCount++;
        lastEpoch++;
        double lr = computeLr(optimizer.lr());
        optimizer.setLr(lr);
        lastLr = optimizer.lr();
    }

    /** The lr that the last {@link #step()} set, one per parameter group. Mirrors {@code get_last_lr()}. */
    public List<Double> getLastLr() {
        return List.of(lastLr);
    }

    /** The number of {@link #step()}s after construction's; 0 right after construction. Mirrors {@code last_epoch}. */
    public int lastEpoch() {
        return lastEpoch;
    }

    /** The optimizer's lr when the schedule started. Mirrors {@code base_lrs[0]}. */
    public double baseLr() {
        return baseLr;
    }

    /** The optimizer whose lr this schedules. */
    public Optimizer optimizer() {
        return optimizer;
    }

    /**
     * The schedule's position and hyper-parameters under PyTorch's names: {@code last_epoch},
     * {@code base_lrs}, {@code _last_lr}, {@code _step_count} and the subclass's (e.g.
     * {@code step_size}, {@code gamma}). Values are Integer, Double, List or Map (JSON-friendly).
     * Mirrors {@code scheduler.state_dict()}.
     */
    public Map<String, Object> stateDict() {
        Map<String, Object> out = new LinkedHashMap<>();
        putHyperParameters(out);
        out.put("base_lrs", List.of(baseLr));
        out.put("last_epoch", lastEpoch);
        out.put("_step_count", stepCount);
        out.put("_last_lr", List.of(lastLr));
        return out;
    }

    /**
     * Restores a state from {@link #stateDict()} (e.g. read back from JSON: numbers of any boxed
     * type). It does not change the optimizer's lr, as in PyTorch: load the optimizer's state dict too.
     * Mirrors {@code scheduler.load_state_dict(state_dict)}.
     *
     * @throws IllegalArgumentException naming the missing or malformed key; nothing changes then
     */
    public void loadStateDict(Map<String, ?> state) {
        int newLastEpoch = (int) number(state, "last_epoch");
        int newStepCount = (int) number(state, "_step_count");
        double newBaseLr = firstNumber(state, "base_lrs");
        double newLastLr = firstNumber(state, "_last_lr");
        loadHyperParameters(state);
        lastEpoch = newLastEpoch;
        stepCount = newStepCount;
        baseLr = newBaseLr;
        lastLr = newLastLr;
    }

    /** Adds the subclass's hyper-parameters under PyTorch's attribute names. */
    protected abstract void putHyperParameters(Map<String, Object> out);

    /** Validates, then takes the subclass's hyper-parameters from a state dict. */
    protected abstract void loadHyperParameters(Map<String, ?> state);

    /** {@code state[key]} as a number, or an error naming the key. */
    protected final double number(Map<String, ?> state, String key) {
        if (!(state.get(key) instanceof Number n)) {
            throw new IllegalArgumentException(getClass().getSimpleName() + ".loadStateDict: the state dict has no number '"
                    + key + "' (a state dict of another scheduler?)");
        }
        return n.doubleValue();
    }

    private double firstNumber(Map<String, ?> state, String key) {
        if (!(state.get(key) instanceof List<?> list && list.size() == 1 && list.get(0) instanceof Number n)) {
            throw new IllegalArgumentException(getClass().getSimpleName() + ".loadStateDict: the state dict has no '" + key
                    + "' list of one number (ddp4j's optimizers have one parameter group)");
        }
        return n.doubleValue();
    }
}
