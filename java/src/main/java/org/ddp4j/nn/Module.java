package org.ddp4j.nn;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;

/**
 * Base of every layer and model: PyTorch's {@code torch.nn.Module}. Holds named parameters
 * (leaves that require grad), buffers (state such as BatchNorm's running statistics) and child
 * modules; names are dotted paths ({@code layer1.0.weight}) in registration order.
 *
 * <p>Parameters and buffers live outside any {@link org.ddp4j.tensor.Tensors#scope()} and are
 * freed by {@link #close()}.
 */
public abstract class Module implements AutoCloseable {
    private final Map<String, Tensor> parameters = new LinkedHashMap<>();
    private final Map<String, Tensor> buffers = new LinkedHashMap<>();
    private final Map<String, Module> children = new LinkedHashMap<>();
    private boolean training = true;

    /** Computes the module's output. Mirrors {@code Module.forward}. */
    public abstract Tensor forward(Tensor input);

    /** Registers t as parameter {@code name}: it requires grad and outlives scopes. Returns t. */
    protected Tensor registerParameter(String name, Tensor t) {
        checkName(name);
        t.keep().requiresGrad(true);
        parameters.put(name, t);
        return t;
    }

    /** Registers t as buffer {@code name} (saved in stateDict, broadcast by DDP). Returns t. */
    protected Tensor registerBuffer(String name, Tensor t) {
        checkName(name);
        buffers.put(name, t.keep());
        return t;
    }

    /**
     * Makes {@code parameter} this module's parameter {@code name}: it replaces the parameter of
     * that name in place (same position), or is registered anew when there is none. Mirrors
     * PyTorch's {@code module.name = parameter}, the way weights are tied: after
     * {@code lmHead.setParameter("weight", wte.weight())} one Parameter object lives in two
     * modules, so {@link #parameters()} and {@link #namedParameters()} list it once (under its first
     * name), {@link #stateDict()} holds it under both names, its gradient sums both uses and
     * DistributedDataParallel reduces it once. Layers that read their parameters through
     * {@link #parameter(String)} (Linear, Embedding, LayerNorm) use the new tensor from then on.
     *
     * @throws IllegalArgumentException if name is empty, contains a dot, or names a buffer or child
     */
    public void setParameter(String name, Tensor parameter) {
        if (parameters.containsKey(name)) {
            parameter.keep().requiresGrad(true);
            parameters.put(name, parameter);
        } else {
            registerParameter(name, parameter);
        }
    }

    /**
     * This module's own parameter {@code name} (not a child's), or null when there is none (a
     * Linear without bias). Layers read their parameters through it in forward so that
     * {@link #setParameter} ties them.
     */
    protected Tensor parameter(String name) {
        return parameters.get(name);
    }

    /** Registers a child module under {@code name}. Returns it. */
    protected <M extends Module> M registerModule(String name, M module) {
        checkName(name);
        children.put(name, module);
        return module;
    }

    /**
     * Puts replacement in the place of child {@code name} (same position in the child order); what
     * {@link SyncBatchNorm#convertSyncBatchnorm} does as PyTorch's {@code add_module} over an existing name.
     *
     * @throws IllegalArgumentException if there is no child of that name
     */
    void replaceChild(String name, Module replacement) {
        if (!children.containsKey(name)) {
            throw new IllegalArgumentException(getClass().getSimpleName() + " has no child '" + name + "' to replace");
        }
        children.put(name, replacement);
    }

    private void checkName(String name) {
        if (name.isEmpty() || name.contains(".") || parameters.containsKey(name) || buffers.containsKey(name)
                || children.containsKey(name)) {
            throw new IllegalArgumentException("invalid or duplicate attribute name '" + name + "' in " + getClass().getSimpleName());
        }
    }

    /**
     * Parameters of this module and its children by dotted name, each tensor once (a parameter
     * tied into several modules under the first name met). Mirrors
     * {@code named_parameters(remove_duplicate=True)}.
     */
    public Map<String, Tensor> namedParameters() {
        Map<String, Tensor> all = new LinkedHashMap<>();
        collect(all, "", true);
        Map<String, Tensor> out = new LinkedHashMap<>();
        Map<Tensor, Boolean> seen = new IdentityHashMap<>();
        all.forEach((name, t) -> {
            if (seen.put(t, Boolean.TRUE) == null) {
                out.put(name, t);
            }
        });
        return out;
    }

    /** All parameters in registration order, each tensor once (tied ones too). Mirrors {@code parameters()}. */
    public List<Tensor> parameters() {
        return new ArrayList<>(namedParameters().values());
    }

    /** Buffers of this module and its children by dotted name. Mirrors {@code named_buffers()}. */
    public Map<String, Tensor> namedBuffers() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        collect(out, "", false);
        return out;
    }

    private void collect(Map<String, Tensor> out, String prefix, boolean params) {
        (params ? parameters : buffers).forEach((name, t) -> out.put(prefix + name, t));
        children.forEach((name, child) -> child.collect(out, prefix + name + ".", params));
    }

    /** Direct children by name. Mirrors {@code named_children()}. */
    public Map<String, Module> namedChildren() {
        return Collections.unmodifiableMap(children);
    }

    /**
     * Parameters and buffers by dotted name (the live tensors, not copies); a tied parameter appears
     * under each of its names. Mirrors {@code state_dict()}.
     */
    public Map<String, Tensor> stateDict() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        collectState(out, "");
        return out;
    }

    private void collectState(Map<String, Tensor> out, String prefix) {
        parameters.forEach((name, t) -> out.put(prefix + name, t));
        buffers.forEach((name, t) -> out.put(prefix + name, t));
        children.forEach((name, child) -> child.collectState(out, prefix + name + "."));
    }

    /**
     * Copies values from {@code state} into this module's parameters and buffers; every name must
     * match. Mirrors {@code load_state_dict(state, strict=True)}. See
     * {@link #loadStateDict(Map, boolean)} for the checks and the {@code module.} prefix.
     *
     * @throws IllegalArgumentException listing every missing key, unexpected key and shape or
     *     dtype mismatch; nothing is copied then
     */
    public void loadStateDict(Map<String, Tensor> state) {
        loadStateDict(state, true);
    }

    /**
     * Copies values from {@code state} (tensors on any device) into this module's parameters and
     * buffers of the same name. Mirrors {@code load_state_dict(state, strict)}: with strict, a
     * name of the module missing from state or a name of state the module lacks is an error; without,
     * the names that matched are loaded and the others returned. A shape mismatch is an error
     * either way, as in PyTorch; float32, bfloat16 and float16 values (on the CPU) are converted to
     * the module's dtype, as PyTorch's {@code copy_} does, and any other dtype mismatch (int64 against
     * a floating type) is an error. All checks run before anything is copied.
     *
     * <p>Unlike PyTorch, DistributedDataParallel's {@code module.} prefix is matched both ways: a
     * state dict saved from a DDP model (every key {@code module.*}) loads into the bare module,
     * and a bare one loads into a DDP model (see {@link StateDicts#consumePrefixInStateDictIfPresent}).
     *
     * @return the missing and unexpected keys (both empty after a strict load)
     * @throws IllegalArgumentException listing every missing key and unexpected key (strict) and
     *     every shape or dtype mismatch, e.g. {@code Error(s) in loading state_dict for ConvNet:
     *     Missing key(s) in state_dict: fc.bias}
     */
    public IncompatibleKeys loadStateDict(Map<String, Tensor> state, boolean strict) {
        Map<String, Tensor> own = stateDict();
        Map<String, Tensor> given = StateDicts.matchDataParallelPrefix(state, own.keySet());
        List<String> missing = new ArrayList<>();
        List<String> mismatched = new ArrayList<>();
        // Floating-point values of another dtype, converted before anything is copied (PyTorch's copy_ converts).
        Map<String, Tensor> converted = new LinkedHashMap<>();
        own.forEach((name, target) -> {
            Tensor source = given.get(name);
            if (source == null) {
                missing.add(name);
            } else if (!Arrays.equals(source.shape(), target.shape())) {
                mismatched.add("size mismatch for " + name + ": copying " + source.describe() + " from the state dict, the"
                        + " module has " + target.describe());
            } else if (source.dtype() != target.dtype()) {
                if (source.dtype().isFloatingPoint() && target.dtype().isFloatingPoint() && !source.device().isCuda()) {
                    converted.put(name, source.to(target.dtype()));
                } else {
                    mismatched.add("dtype mismatch for " + name + ": copying " + source.describe() + " from the state dict,"
                            + " the module has " + target.describe() + " (only float32, bfloat16 and float16 on the CPU"
                            + " convert into each other on load: convert the tensor to " + target.dtype().name().toLowerCase()
                            + " first)");
                }
            }
        });
        List<String> unexpected = new ArrayList<>();
        for (String name : given.keySet()) {
            if (!own.containsKey(name)) {
                unexpected.add(name);
            }
        }
        List<String> errors = new ArrayList<>();
        if (strict && !missing.isEmpty()) {
            errors.add("Missing key(s) in state_dict: " + String.join(", ", missing));
        }
        if (strict && !unexpected.isEmpty()) {
            errors.add("Unexpected key(s) in state_dict: " + String.join(", ", unexpected));
        }
        errors.addAll(mismatched);
        try {
            if (!errors.isEmpty()) {
                throw new IllegalArgumentException("Error(s) in loading state_dict for " + getClass().getSimpleName() + ":\n\t"
                        + String.join("\n\t", errors) + (strict && (!missing.isEmpty() || !unexpected.isEmpty())
                        ? "\n(was the state dict saved from another model? loadStateDict(state, false) loads the names that match)"
                        : ""));
            }
            own.forEach((name, target) -> {
                Tensor source = converted.getOrDefault(name, given.get(name));
                if (source != null) {
                    target.copyFrom(source);
                }
            });
        } finally {
            converted.values().forEach(Tensor::close);
        }
        notifyStateLoaded();
        return new IncompatibleKeys(List.copyOf(missing), List.copyOf(unexpected));
    }

    private void notifyStateLoaded() {
        onStateLoaded();
        children.values().forEach(Module::notifyStateLoaded);
    }

    /** Called on this module and every descendant after {@link #loadStateDict} wrote new values. */
    protected void onStateLoaded() {}

    /** Sets training mode here and in all children. Returns this. Mirrors {@code train(mode)}. */
    public Module train(boolean mode) {
        training = mode;
        children.values().forEach(c -> c.train(mode));
        return this;
    }

    public Module train() {
        return train(true);
    }

    /** Evaluation mode (BatchNorm uses running statistics). Mirrors {@code eval()}. */
    public Module eval() {
        return train(false);
    }

    public boolean isTraining() {
        return training;
    }

    /** Sets every parameter's gradient to zero. Mirrors {@code zero_grad()} of PyTorch 1.13 ({@code set_to_none=False}). */
    public void zeroGrad() {
        zeroGrad(false);
    }

    /**
     * Resets every parameter's gradient. Mirrors {@code zero_grad(set_to_none)}: with setToNone the
     * gradients are dropped ({@link Tensor#clearGrad()}: {@code grad()} becomes null, optimizers
     * skip the parameter until a backward gives it a new one, and a gradient autograd allocated is
     * freed), else they are filled with zeros in place. Under DistributedDataParallel both work: the
     * bucket views stay owned by DDP and become the gradients again at the next backward.
     */
    public void zeroGrad(boolean setToNone) {
        for (Tensor p : parameters()) {
            if (setToNone) {
                p.clearGrad();
            } else if (p.grad() != null) {
                p.grad().fill(0);
            }
        }
    }

    /**
     * Moves parameters and buffers (and gradients) to {@code device} in place: the tensor objects
     * stay, so call it before creating the optimiser or DistributedDataParallel, as in PyTorch.
     * Returns this. Mirrors {@code Module.to(device)}.
     *
     * @throws IllegalStateException when device is a GPU and there is none, or this build has no CUDA library
     * @throws IllegalArgumentException when device's ordinal is not a visible GPU
     */
    public Module to(Device device) {
        for (Tensor t : distinctState()) {
            t.moveTo(device);
        }
        return this;
    }

    /** The parameters and buffers, each tensor once (tied parameters appear under several names). */
    private List<Tensor> distinctState() {
        Map<Tensor, Boolean> seen = new IdentityHashMap<>();
        List<Tensor> out = new ArrayList<>();
        for (Tensor t : stateDict().values()) {
            if (seen.put(t, Boolean.TRUE) == null) {
                out.add(t);
            }
        }
        return out;
    }

    /**
     * The text between this module's parentheses in {@link #toString()} (e.g. Linear's
     * {@code in_features=2, out_features=2, bias=True}); empty by default. Mirrors
     * {@code Module.extra_repr()}.
     */
    protected String extraRepr() {
        return "";
    }

    /**
     * The module tree as PyTorch's {@code print(model)} shows it: the class name, its
     * {@link #extraRepr()}, and each child as {@code (name): child} indented by two spaces, e.g.
     * {@code ConvNet(\n  (layer1): Sequential(\n    (0): Conv2d(1, 16, kernel_size=(5, 5), ...)\n ...}.
     * Mirrors {@code Module.__repr__}.
     */
    @Override
    public String toString() {
        List<String> lines = new ArrayList<>();
        String extra = extraRepr();
        List<String> extraLines = extra.isEmpty() ? List.of() : List.of(extra.split("\n", -1));
        lines.addAll(extraLines);
        children.forEach((name, child) -> lines.add("(" + name + "): " + child.toString().replace("\n", "\n  ")));
        StringBuilder out = new StringBuilder(getClass().getSimpleName()).append('(');
        if (extraLines.size() == 1 && children.isEmpty()) {
            out.append(extraLines.get(0));
        } else if (!lines.isEmpty()) {
            out.append("\n  ").append(String.join("\n  ", lines)).append('\n');
        }
        return out.append(')').toString();
    }

    /** Frees parameters, their gradients and buffers. */
    @Override
    public void close() {
        for (Tensor t : distinctState()) {
            if (t.grad() != null) {
                t.grad().close();
            }
            t.close();
        }
    }
}
