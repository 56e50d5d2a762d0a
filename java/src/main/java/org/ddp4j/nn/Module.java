package org.ddp4j.nn;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
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

    /** Registers a child module under {@code name}. Returns it. */
    protected <M extends Module> M registerModule(String name, M module) {
        checkName(name);
        children.put(name, module);
        return module;
    }

    private void checkName(String name) {
        if (name.isEmpty() || name.contains(".") || parameters.containsKey(name) || buffers.containsKey(name)
                || children.containsKey(name)) {
            throw new IllegalArgumentException("invalid or duplicate attribute name '" + name + "' in " + getClass().getSimpleName());
        }
    }

    /** Parameters of this module and its children by dotted name. Mirrors {@code named_parameters()}. */
    public Map<String, Tensor> namedParameters() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        collect(out, "", true);
        return out;
    }

    /** All parameters in registration order. Mirrors {@code parameters()}. */
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
     * Parameters and buffers by dotted name (the live tensors, not copies). Mirrors
     * {@code state_dict()}.
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
     * Copies values from {@code state} into this module's parameters and buffers. Mirrors
     * {@code load_state_dict(strict=True)}.
     *
     * @throws IllegalArgumentException naming missing keys, unexpected keys, or a shape mismatch
     */
    public void loadStateDict(Map<String, Tensor> state) {
        Map<String, Tensor> own = stateDict();
        TreeSet<String> missing = new TreeSet<>(own.keySet());
        missing.removeAll(state.keySet());
        TreeSet<String> unexpected = new TreeSet<>(state.keySet());
        unexpected.removeAll(own.keySet());
        if (!missing.isEmpty() || !unexpected.isEmpty()) {
            throw new IllegalArgumentException("loadStateDict: missing keys " + missing + ", unexpected keys " + unexpected);
        }
        own.forEach((name, target) -> {
            Tensor source = state.get(name);
            if (!Arrays.equals(source.shape(), target.shape()) || source.dtype() != target.dtype()) {
                throw new IllegalArgumentException("loadStateDict: " + name + " is " + source.describe()
                        + " but the module expects " + target.describe());
            }
            target.copyFrom(source);
        });
        notifyStateLoaded();
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

    /** Sets every parameter's gradient to zero. Mirrors {@code zero_grad(set_to_none=False)}. */
    public void zeroGrad() {
        for (Tensor p : parameters()) {
            if (p.grad() != null) {
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
        for (Tensor t : stateDict().values()) {
            t.moveTo(device);
        }
        return this;
    }

    /** Frees parameters, their gradients and buffers. */
    @Override
    public void close() {
        for (Tensor t : stateDict().values()) {
            if (t.grad() != null) {
                t.grad().close();
            }
            t.close();
        }
    }
}
