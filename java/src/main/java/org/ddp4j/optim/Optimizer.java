package org.ddp4j.optim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.internal.MemoryPlan;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * Updates parameters from their gradients, group by group. Mirrors {@code torch.optim.Optimizer}:
 * it holds a list of {@link ParamGroup}s, each with its parameters and its own hyper-parameters
 * (defaults from the constructor's options), per-parameter state keyed by the parameter's index
 * (indices run over the groups in order, as PyTorch's), and state dicts of PyTorch's layout.
 *
 * <p>A group is given as a Map, as PyTorch's dict: {@code Map.of("params", biases,
 * "weight_decay", 0.0)} ({@code params} a Collection of tensors, or one tensor; other keys the
 * optimizer's option names, e.g. SGD's {@code lr, momentum, dampening, weight_decay, nesterov}).
 * An unknown key is refused with an IllegalArgumentException naming it and the allowed keys.
 *
 * <p>Subclasses give their option defaults, check options ({@link #checkOptions}), and update one
 * group at a time ({@link #stepGroup}); the state lives here, as PyTorch's {@code state}.
 * Closing an optimizer frees its state (e.g. momentum buffers), not the parameters.
 */
public abstract class Optimizer implements AutoCloseable {
    private final String name;
    private final Map<String, Object> defaults;
    private final List<ParamGroup> groups = new ArrayList<>();
    /** Every group's parameters, in order: a parameter's position here is its state index. */
    private final List<Tensor> params = new ArrayList<>();
    /** Per parameter index, its state under PyTorch's names (empty before its first step). */
    private final List<Map<String, Tensor>> state = new ArrayList<>();

    /**
     * @param name the class name stored in state dicts, e.g. "SGD"
     * @param defaults every option under PyTorch's name with its value from the constructor's options
     * @param paramGroups the groups as Maps (see the class comment)
     * @throws IllegalArgumentException on no parameters at all ("SGD got an empty parameter list"),
     *     an unknown or ill-typed key, an invalid option, a non-leaf tensor, or a tensor in two groups
     * @throws IllegalStateException when the parameters, their gradients and the state this
     *     optimizer will make exceed what a rank may use (see {@code DDP4J_MEMORY_PER_RANK}), naming the numbers
     */
    protected Optimizer(String name, Map<String, Object> defaults, Collection<? extends Map<String, ?>> paramGroups) {
        this.name = name;
        this.defaults = Collections.unmodifiableMap(new LinkedHashMap<>(defaults));
        checkOptions(this.defaults);
        for (Map<String, ?> group : paramGroups) {
            addParamGroup(group);
        }
        if (params.isEmpty()) {
            throw new IllegalArgumentException(name + " got an empty parameter list");
        }
        long stateBytes = plannedStateBytes();
        if (stateBytes >= 0) {
            long hostBytes = Tensors.hostBytes(params);
            Map<String, Long> parts = new LinkedHashMap<>();
            parts.put("parameters", hostBytes);
            parts.put("gradients", hostBytes);
            parts.put(name + "'s state", stateBytes);
            MemoryPlan.check(name, parts, () -> "shard the optimizer state over the ranks with ZeroRedundancyOptimizer"
                    + " (org.ddp4j.distributed.optim), or the parameters, gradients and state with fully_shard"
                    + " (org.ddp4j.distributed.fsdp), use fewer ranks on each host, or a smaller model");
        }
    }

    /**
     * The host bytes of state this optimizer will make at its first step, for the memory check at
     * construction (see {@code DDP4J_MEMORY_PER_RANK}); 0 by default, -1 for a wrapper that checks
     * itself once built. It reads only the groups, since it runs before the subclass's fields are set.
     */
    public long plannedStateBytes() {
        return 0;
    }

    /** Wraps a plain parameter list as one group: {@code torch.optim.X(params)}. */
    protected static List<Map<String, ?>> oneGroup(List<Tensor> params) {
        return List.of(Map.of("params", params));
    }

    /**
     * Checks a group's full options (typed as {@link ParamGroup} holds them), with PyTorch's
     * wording, e.g. "Invalid learning rate: -0.1". Called on construction, on each added group,
     * on {@link ParamGroup#set} and on a loaded state dict's groups; it must not read the
     * subclass's fields (it runs before they are set).
     */
    protected abstract void checkOptions(Map<String, Object> options);

    /**
     * Updates the parameters of one group that have a gradient; {@code firstIndex} is the state
     * index of its first parameter (so parameter j of the group has state {@code state(firstIndex + j)}).
     */
    protected abstract void stepGroup(ParamGroup group, int firstIndex);

    /** The state names this optimizer keeps, e.g. SGD's {@code momentum_buffer} (for load checks). */
    public abstract List<String> stateNames();

    /** The state names a loaded parameter must have under {@code options} (none by default). */
    public List<String> requiredStateNames(Map<String, Object> options) {
        return List.of();
    }

    /**
     * Performs one update of every parameter that has a gradient, group by group, in place (no
     * autograd); parameters without a gradient are skipped and keep no state, as in PyTorch.
     * Mirrors {@code optimizer.step()}.
     *
     * Wrappers that step another optimizer (ZeroRedundancyOptimizer) override it.
     *
     * @throws IllegalArgumentException if a gradient's shape or dtype does not match its parameter
     */
    public void step() {
        int first = 0;
        for (ParamGroup group : groups) {
            stepGroup(group, first);
            first += group.params().size();
        }
    }

    /**
     * Sets every parameter's gradient to zero (keeping the tensor). Mirrors {@code zero_grad()} of
     * PyTorch 1.13 ({@code set_to_none=False}).
     */
    public final void zeroGrad() {
        zeroGrad(false);
    }

    /**
     * Resets every parameter's gradient. Mirrors {@code zero_grad(set_to_none)}: with setToNone the
     * gradients are dropped ({@link Tensor#clearGrad()}: {@code grad()} becomes null, so
     * {@link #step()} skips the parameter, momentum and all, until a backward gives it a new one),
     * else they are filled with zeros in place (a zero gradient still moves a parameter with
     * momentum or weight decay, as in PyTorch).
     */
    public final void zeroGrad(boolean setToNone) {
        for (Tensor p : params) {
            if (setToNone) {
                p.clearGrad();
            } else if (p.grad() != null) {
                p.grad().fill(0);
            }
        }
    }

    /** The parameter groups, in order (unmodifiable; each group is live). Mirrors {@code optimizer.param_groups}. */
    public final List<ParamGroup> paramGroups() {
        return Collections.unmodifiableList(groups);
    }

    /**
     * Adds a group; options it does not give take the constructor's. Mirrors
     * {@code optimizer.add_param_group({"params": ..., "lr": ...})}. Example:
     * {@code opt.addParamGroup(Map.of("params", head.parameters(), "lr", 0.01))}.
     *
     * @param group {@code "params"}: a Collection of leaf tensors or one tensor; other keys: option names
     * @throws IllegalArgumentException naming the key and the allowed keys for an unknown key; on a
     *     missing {@code params}, a non-leaf tensor, a tensor already in a group ("some parameters
     *     appear in more than one parameter group"), or an invalid option; nothing changes then
     */
    public final void addParamGroup(Map<String, ?> group) {
        List<Tensor> groupParams = paramsOf(group);
        Map<String, Object> spec = new LinkedHashMap<>(group);
        spec.remove("params");
        Map<String, Object> options = new LinkedHashMap<>(defaults);
        options.putAll(normalize(spec, defaults));
        checkOptions(options);
        groups.add(new ParamGroup(this, groupParams, options));
        for (Tensor p : groupParams) {
            params.add(p);
            state.add(new LinkedHashMap<>());
        }
    }

    private List<Tensor> paramsOf(Map<String, ?> group) {
        Object given = group.get("params");
        List<Tensor> out = new ArrayList<>();
        if (given instanceof Tensor t) {
            out.add(t);
        } else if (given instanceof Collection<?> c && c.stream().allMatch(Tensor.class::isInstance)) {
            c.forEach(t -> out.add((Tensor) t));
        } else {
            throw new IllegalArgumentException(name + ": a parameter group needs 'params', a collection of tensors or a"
                    + " tensor; got " + (given == null ? "none" : given.getClass().getSimpleName()) + " (keys: "
                    + group.keySet() + ")");
        }
        Map<Tensor, Boolean> seen = new IdentityHashMap<>();
        params.forEach(p -> seen.put(p, true));
        for (Tensor p : out) {
            if (!p.isLeaf()) {
                throw new IllegalArgumentException(name + " can't optimize a non-leaf tensor (" + p.describe()
                        + ", produced by " + p.gradFn().name() + "); pass parameters, e.g. module.parameters()");
            }
            if (seen.put(p, true) != null) {
                throw new IllegalArgumentException(name + ": some parameters appear in more than one parameter group ("
                        + p.describe() + ")");
            }
        }
        return out;
    }

    /**
     * The options of {@code spec} typed as their {@code like} values are (any Number to Double, a
     * Boolean, {@code betas} as two numbers to a List of two Doubles).
     *
     * @throws IllegalArgumentException naming an unknown key and the allowed keys, or a value of the wrong type
     */
    final Map<String, Object> normalize(Map<String, ?> spec, Map<String, Object> like) {
        Map<String, Object> out = new LinkedHashMap<>();
        spec.forEach((key, value) -> {
            Object model = like.get(key);
            if (model == null) {
                throw unknownKey(key);
            }
            out.put(key, typed(key, value, model));
        });
        return out;
    }

    private Object typed(String key, Object value, Object model) {
        if (model instanceof Double && value instanceof Number n) {
            return n.doubleValue();
        }
        if (model instanceof Boolean && value instanceof Boolean) {
            return value;
        }
        if (model instanceof List<?> && value instanceof double[] a && a.length == 2) {
            return List.of(a[0], a[1]);
        }
        if (model instanceof List<?> && value instanceof List<?> l && l.size() == 2
                && l.stream().allMatch(Number.class::isInstance)) {
            return List.of(((Number) l.get(0)).doubleValue(), ((Number) l.get(1)).doubleValue());
        }
        throw new IllegalArgumentException(name + ": parameter group option '" + key + "' must be "
                + (model instanceof Double ? "a number" : model instanceof Boolean ? "a boolean" : "two numbers")
                + ", got " + value + (value == null ? "" : " (" + value.getClass().getSimpleName() + ")"));
    }

    /** "SGD: unknown parameter group option 'weight_decy' (allowed: params, lr, ...)". */
    final IllegalArgumentException unknownKey(String key) {
        return new IllegalArgumentException(name + ": unknown parameter group option '" + key + "' (allowed: params, "
                + String.join(", ", defaults.keySet()) + ")");
    }

    /** Every group's parameters, in order (unmodifiable): index i here is state index i. */
    public final List<Tensor> params() {
        return Collections.unmodifiableList(params);
    }

    /** The position of {@code param} in {@link #params()} (by identity), or -1 if this optimizer does not hold it. */
    protected final int indexOf(Tensor param) {
        for (int i = 0; i < params.size(); i++) {
            if (params.get(i) == param) {
                return i;
            }
        }
        return -1;
    }

    /** The live state of parameter {@code index} (mutable; empty before its first step). Mirrors {@code state[p]}. */
    protected final Map<String, Tensor> state(int index) {
        return state.get(index);
    }

    /** The state tensor {@code stateName} of {@code param}, or null (none yet, or not a parameter of this optimizer). */
    protected final Tensor stateOf(Tensor param, String stateName) {
        int i = indexOf(param);
        return i < 0 ? null : state.get(i).get(stateName);
    }

    /** The learning rate of the first group. Mirrors {@code param_groups[0]['lr']}. */
    public double lr() {
        return groups.get(0).lr();
    }

    /**
     * Sets every group's learning rate for later steps (to set one group's, use
     * {@code paramGroups().get(i).setLr(lr)}). Mirrors {@code for g in param_groups: g['lr'] = lr}.
     *
     * @throws IllegalArgumentException "Invalid learning rate: -0.1" if lr is negative or NaN; nothing changes then
     */
    public void setLr(double lr) {
        Map<String, Object> changed = new LinkedHashMap<>(groups.get(0).options());
        changed.put("lr", lr);
        checkOptions(changed);
        groups.forEach(g -> g.setLr(lr));
    }

    /**
     * A parameter's state as the state dict holds it (a new map of live tensors); subclasses
     * override to add values they keep elsewhere (Adam's {@code step}).
     */
    protected Map<String, Tensor> savedState(int index) {
        return new LinkedHashMap<>(state.get(index));
    }

    /**
     * Takes a checked, loaded state for parameter {@code index} (the state is empty): by default a
     * copy of each tensor on the parameter's device, outside any scope. Adam overrides it for {@code step}.
     */
    protected void restoreState(int index, Map<String, Tensor> saved) {
        Tensor p = params.get(index);
        saved.forEach((key, t) -> state.get(index).put(key, p.zerosLike().keep().copyFrom(t)));
    }

    /** Whether a state entry is a step count (one non-negative whole number) rather than a tensor shaped as its parameter. */
    public boolean isStepCount(String stateName) {
        return false;
    }

    /**
     * The optimizer's state and hyper-parameters, with the live state tensors (not copies), in
     * PyTorch's layout: {@code state} maps a parameter's index (over all groups, in order) to its
     * state (only parameters that have any); each of {@code paramGroups} holds the group's options
     * and {@code params}, the list of its indices. Mirrors {@code optimizer.state_dict()}; save it
     * with {@link OptimizerStateDict#save}.
     */
    public final OptimizerStateDict stateDict() {
        Map<Integer, Map<String, Tensor>> out = new LinkedHashMap<>();
        for (int i = 0; i < params.size(); i++) {
            Map<String, Tensor> saved = savedState(i);
            if (!saved.isEmpty()) {
                out.put(i, saved);
            }
        }
        return new OptimizerStateDict(name, out, paramGroupDicts());
    }

    /**
     * Each group's options and {@code params}, the list of its parameter indices (new maps):
     * {@code state_dict()["param_groups"]}, without building the state.
     */
    public final List<Map<String, Object>> paramGroupDicts() {
        List<Map<String, Object>> out = new ArrayList<>();
        int next = 0;
        for (ParamGroup g : groups) {
            Map<String, Object> dict = new LinkedHashMap<>(g.options());
            List<Integer> indices = new ArrayList<>();
            for (int j = 0; j < g.params().size(); j++) {
                indices.add(next++);
            }
            dict.put("params", indices);
            out.add(dict);
        }
        return out;
    }

    /** The optimizer's class name as state dicts store it, e.g. "AdamW". Mirrors {@code type(optimizer).__name__}. */
    public final String name() {
        return name;
    }

    /**
     * Replaces the optimizer's state and every group's options with copies of {@code stateDict}'s
     * (tensors on any device; they are copied to each parameter's device). Groups are matched in
     * order, and within a group the saved indices in order to the group's parameters, as PyTorch
     * does. Mirrors {@code optimizer.load_state_dict(state_dict)}.
     *
     * @throws IllegalArgumentException naming the problem when stateDict is of another optimizer,
     *     has another number of groups or of parameters in a group, an unknown or missing option,
     *     an invalid option, or a state tensor of the wrong name or shape; nothing changes then
     */
    public final void loadStateDict(OptimizerStateDict stateDict) {
        String where = name + ".loadStateDict: ";
        if (!name.equals(stateDict.optimizer())) {
            throw new IllegalArgumentException(where + "the state dict is of optimizer '" + stateDict.optimizer()
                    + "', not " + name);
        }
        List<Map<String, Object>> saved = stateDict.paramGroups();
        if (saved.size() != groups.size()) {
            throw new IllegalArgumentException(where + "the state dict has " + saved.size() + " parameter groups but this"
                    + " optimizer has " + groups.size() + " (loaded state dict has a different number of parameter groups)");
        }
        Map<Integer, Integer> savedToCurrent = new LinkedHashMap<>();
        List<Map<String, Object>> newOptions = new ArrayList<>();
        int next = 0;
        for (int gi = 0; gi < groups.size(); gi++) {
            Map<String, Object> dict = saved.get(gi);
            int size = groups.get(gi).params().size();
            if (!(dict.get("params") instanceof List<?> indices) || indices.size() != size) {
                throw new IllegalArgumentException(where + "the state dict's parameter group " + gi + " has "
                        + (dict.get("params") instanceof List<?> l ? l.size() : "no list of") + " parameters but this"
                        + " optimizer's has " + size + " (loaded state dict contains a parameter group that doesn't"
                        + " match the size of optimizer's group)");
            }
            for (Object index : indices) {
                if (!(index instanceof Number n) || savedToCurrent.put(n.intValue(), next++) != null) {
                    throw new IllegalArgumentException(where + "param_groups[" + gi + "]['params'] holds " + index
                            + ", not a parameter index listed once");
                }
            }
            newOptions.add(savedOptions(where, gi, dict));
        }
        stateDict.state().forEach((index, entries) -> {
            Integer current = savedToCurrent.get(index);
            if (current == null) {
                throw new IllegalArgumentException(where + "state for parameter " + index + ", which no parameter group"
                        + " lists (groups list " + savedToCurrent.keySet() + ")");
            }
            checkSavedState(where, index, entries, params.get(current), newOptions.get(groupOf(current)));
        });
        close();
        stateDict.state().forEach((index, entries) -> restoreState(savedToCurrent.get(index), entries));
        for (int gi = 0; gi < groups.size(); gi++) {
            groups.get(gi).replaceOptions(newOptions.get(gi));
        }
    }

    private Map<String, Object> savedOptions(String where, int gi, Map<String, Object> dict) {
        Map<String, Object> spec = new LinkedHashMap<>(dict);
        spec.remove("params");
        for (String key : defaults.keySet()) {
            if (!spec.containsKey(key)) {
                throw new IllegalArgumentException(where + "param_groups[" + gi + "] has no '" + key + "' (a state dict of"
                        + " another optimizer or version?)");
            }
        }
        Map<String, Object> options = normalize(spec, defaults);
        Map<String, Object> ordered = new LinkedHashMap<>(defaults);
        ordered.putAll(options);
        checkOptions(ordered);
        return ordered;
    }

    private void checkSavedState(String where, int index, Map<String, Tensor> entries, Tensor p,
            Map<String, Object> options) {
        for (String required : requiredStateNames(options)) {
            if (!entries.containsKey(required)) {
                throw new IllegalArgumentException(where + "parameter " + index + " has no '" + required + "' state");
            }
        }
        entries.forEach((key, t) -> {
            if (!stateNames().contains(key)) {
                throw new IllegalArgumentException(where + "unknown state '" + key + "' for parameter " + index + " ("
                        + name + " keeps " + String.join(", ", stateNames()) + ")");
            }
            if (isStepCount(key)) {
                if (t.numel() != 1 || !(t.item() >= 0) || t.item() != Math.rint(t.item())) {
                    throw new IllegalArgumentException(where + key + " of parameter " + index + " must be one"
                            + " non-negative whole number, got " + t.describe());
                }
            } else if (!Arrays.equals(t.shape(), p.shape()) || t.dtype() != p.dtype()) {
                throw new IllegalArgumentException(where + key + " of parameter " + index + " is " + t.describe()
                        + " but the parameter is " + p.describe() + " (a state dict of another model?)");
            }
        });
    }

    private int groupOf(int index) {
        int first = 0;
        for (int gi = 0; gi < groups.size(); gi++) {
            first += groups.get(gi).params().size();
            if (index < first) {
                return gi;
            }
        }
        throw new IndexOutOfBoundsException(index);
    }

    /** Frees the state tensors; a later step starts afresh. Subclasses that keep more state extend it. */
    @Override
    public void close() {
        for (Map<String, Tensor> entries : state) {
            entries.values().forEach(Tensor::close);
            entries.clear();
        }
    }

    /**
     * Each group's options, e.g. "SGD(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0,
     * nesterov=false)"; with several groups "SGD([lr=0.1, ...], [lr=0.01, ...])".
     */
    @Override
    public String toString() {
        List<String> parts = new ArrayList<>();
        for (ParamGroup g : groups) {
            parts.add(describe(g.options()));
        }
        return name + (parts.size() == 1 ? "(" + parts.get(0) + ")" : "([" + String.join("], [", parts) + "])");
    }

    /** One group's options for {@link #toString()}; subclasses may print them as PyTorch does. */
    protected String describe(Map<String, Object> options) {
        StringBuilder out = new StringBuilder();
        options.forEach((k, v) -> out.append(out.isEmpty() ? "" : ", ").append(k).append('=').append(v));
        return out.toString();
    }
}
