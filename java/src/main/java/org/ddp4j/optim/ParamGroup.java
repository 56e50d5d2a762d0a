package org.ddp4j.optim;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.Tensor;

/**
 * One parameter group of an {@link Optimizer}: its parameters and its own hyper-parameters.
 * Mirrors an entry of PyTorch's {@code optimizer.param_groups}, a dict {@code {"params": [...],
 * "lr": 0.1, ...}}: {@link #params()} is {@code group["params"]}, {@link #get}{@code ("lr")} is
 * {@code group["lr"]} and {@link #set}{@code ("lr", 0.01)} is {@code group["lr"] = 0.01}.
 *
 * <p>Options are held under PyTorch's names ({@code lr}, {@code weight_decay}, {@code betas}...):
 * numbers as Double, flags as Boolean, {@code betas} as a List of two Doubles. Each group has
 * every option of its optimizer; those its spec did not give came from the optimizer's
 * constructor options, as in PyTorch. Get groups from {@link Optimizer#paramGroups()}; give new
 * ones to {@link Optimizer#addParamGroup(Map)} as a Map.
 */
public final class ParamGroup {
    private final Optimizer owner;
    private final List<Tensor> params;
    private final Map<String, Object> options;
    /**
     * PyTorch's {@code group["initial_lr"]}: the lr the first scheduler found, which later schedulers
     * on the same optimizer take as their base lr; null until a scheduler is made. Kept out of
     * {@link #options()}: it is the schedulers' bookkeeping, not an optimizer option.
     */
    private Double initialLr;

    ParamGroup(Optimizer owner, List<Tensor> params, Map<String, Object> options) {
        this.owner = owner;
        this.params = List.copyOf(params);
        this.options = new LinkedHashMap<>(options);
    }

    /** The group's parameters, in order (unmodifiable). Mirrors {@code group["params"]}. */
    public List<Tensor> params() {
        return params;
    }

    /**
     * The group's options under PyTorch's names, in the optimizer's order, without {@code params}
     * (an unmodifiable view: it follows {@link #set}). Mirrors the group dict less {@code "params"}.
     */
    public Map<String, Object> options() {
        return Collections.unmodifiableMap(options);
    }

    /**
     * The option {@code key} (Double, Boolean, or List of Doubles for {@code betas}). Mirrors {@code group[key]}.
     *
     * @throws IllegalArgumentException naming the key and the allowed keys when the optimizer has no such option
     */
    public Object get(String key) {
        Object value = options.get(key);
        if (value == null) {
            throw owner.unknownKey(key);
        }
        return value;
    }

    /** A numeric option, e.g. {@code number("weight_decay")}. */
    public double number(String key) {
        return (Double) get(key);
    }

    /** A boolean option, e.g. {@code flag("nesterov")}. */
    public boolean flag(String key) {
        return (Boolean) get(key);
    }

    /** The group's learning rate. Mirrors {@code group["lr"]}. */
    public double lr() {
        return number("lr");
    }

    /**
     * Sets the group's learning rate for later steps; the LR schedulers call it. Mirrors
     * {@code group["lr"] = lr}.
     *
     * @throws IllegalArgumentException "Invalid learning rate: -0.1" if lr is negative or NaN
     */
    public void setLr(double lr) {
        set("lr", lr);
    }

    /**
     * Sets an option for later steps, checked as the optimizer's constructor checks it (any Number
     * for a numeric option). Mirrors {@code group[key] = value}.
     *
     * @throws IllegalArgumentException naming the key when it is unknown (with the allowed keys),
     *     of the wrong type, or invalid ("Invalid weight_decay value: -1.0"); nothing changes then
     */
    public void set(String key, Object value) {
        Map<String, Object> changed = new LinkedHashMap<>(options);
        changed.putAll(owner.normalize(Map.of(key, value), options));
        owner.checkOptions(changed);
        options.clear();
        options.putAll(changed);
    }

    /** {@code group.setdefault("initial_lr", group["lr"])}: the lr the group's first scheduler found. */
    double initialLrOrSet() {
        if (initialLr == null) {
            initialLr = lr();
        }
        return initialLr;
    }

    /** {@code group["initial_lr"] = lr} (OneCycleLR starts its own schedule). */
    void setInitialLr(double lr) {
        initialLr = lr;
    }

    /** Replaces every option at once (a loaded state dict's); the caller has checked them. */
    void replaceOptions(Map<String, Object> checked) {
        options.clear();
        options.putAll(checked);
    }

    /** E.g. "lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=false (2 params)". */
    @Override
    public String toString() {
        StringBuilder out = new StringBuilder();
        options.forEach((k, v) -> out.append(out.isEmpty() ? "" : ", ").append(k).append('=').append(v));
        return out.append(" (").append(params.size()).append(params.size() == 1 ? " param)" : " params)").toString();
    }
}
