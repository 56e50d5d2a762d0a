package org.ddp4j.optim;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.internal.SgdNatives;
import org.ddp4j.tensor.Tensor;

/**
 * Stochastic gradient descent, optionally with momentum, dampening, weight decay and Nesterov
 * momentum. Mirrors {@code torch.optim.SGD} exactly: for each parameter p with gradient g,
 *
 * <pre>
 *   g = g + weight_decay * p
 *   if momentum != 0:
 *       buf = g                                     (first step)
 *       buf = momentum * buf + (1 - dampening) * g  (later steps)
 *       g = nesterov ? g + momentum * buf : buf
 *   p = p - lr * g
 * </pre>
 *
 * computed natively in place in one pass per parameter. Momentum buffers are created on a
 * parameter's first step, live outside any {@link org.ddp4j.tensor.Tensors#scope()}, and are freed
 * by {@link #close()}.
 */
public final class SGD implements Optimizer {
    /** The class name stored in a state dict. */
    private static final String NAME = "SGD";
    /** PyTorch's name of the per-parameter momentum state. */
    public static final String MOMENTUM_BUFFER = "momentum_buffer";

    private final List<Tensor> params;
    private final Tensor[] momentumBuffers;
    private double lr;
    private double momentum;
    private double dampening;
    private double weightDecay;
    private boolean nesterov;

    /**
     * Plain SGD: {@code p -= lr * grad}. Mirrors {@code torch.optim.SGD(params, lr)}.
     *
     * @throws IllegalArgumentException if params is empty, holds a non-leaf, or lr is negative
     */
    public SGD(List<Tensor> params, double lr) {
        this(params, lr, 0, 0, 0, false);
    }

    /**
     * SGD with every option of {@code torch.optim.SGD(params, lr, momentum, dampening,
     * weight_decay, nesterov)}.
     *
     * @param params leaf tensors (usually {@code module.parameters()}); order defines state order
     * @param lr learning rate, {@code >= 0}
     * @param momentum momentum factor, {@code >= 0}
     * @param dampening dampening for momentum
     * @param weightDecay L2 penalty, {@code >= 0}
     * @param nesterov whether to use Nesterov momentum (needs momentum {@code > 0} and dampening 0)
     * @throws IllegalArgumentException on an empty or non-leaf parameter list or an invalid
     *     hyper-parameter, with PyTorch's wording (e.g. "Invalid learning rate: -0.1",
     *     "Nesterov momentum requires a momentum and zero dampening")
     */
    public SGD(List<Tensor> params, double lr, double momentum, double dampening, double weightDecay,
            boolean nesterov) {
        if (params.isEmpty()) {
            throw new IllegalArgumentException("SGD got an empty parameter list");
        }
        for (Tensor p : params) {
            if (!p.isLeaf()) {
                throw new IllegalArgumentException("SGD can't optimize a non-leaf tensor (" + p.describe()
                        + ", produced by " + p.gradFn().name() + "); pass parameters, e.g. module.parameters()");
            }
        }
        checkHyperParameters(lr, momentum, dampening, weightDecay, nesterov);
        this.params = List.copyOf(params);
        this.momentumBuffers = new Tensor[params.size()];
        this.lr = lr;
        this.momentum = momentum;
        this.dampening = dampening;
        this.weightDecay = weightDecay;
        this.nesterov = nesterov;
    }

    private static void checkHyperParameters(double lr, double momentum, double dampening, double weightDecay,
            boolean nesterov) {
        checkLr(lr);
        if (!(momentum >= 0)) {
            throw new IllegalArgumentException("Invalid momentum value: " + momentum);
        }
        if (!(weightDecay >= 0)) {
            throw new IllegalArgumentException("Invalid weight_decay value: " + weightDecay);
        }
        if (nesterov && (momentum <= 0 || dampening != 0)) {
            throw new IllegalArgumentException("Nesterov momentum requires a momentum and zero dampening");
        }
    }

    private static void checkLr(double lr) {
        if (!(lr >= 0)) {
            throw new IllegalArgumentException("Invalid learning rate: " + lr);
        }
    }

    /**
     * Updates every parameter whose {@code grad()} is non-null, in place (no autograd); parameters
     * without a gradient are skipped and keep no momentum state, as in PyTorch.
     *
     * @throws IllegalArgumentException if a gradient's shape or dtype does not match its parameter
     */
    @Override
    public void step() {
        for (int i = 0; i < params.size(); i++) {
            Tensor p = params.get(i);
            Tensor g = p.grad();
            if (g == null) {
                continue;
            }
            boolean first = false;
            long buf = 0;
            if (momentum != 0) {
                if (momentumBuffers[i] == null) {
                    // Untracked, so it survives the step's scope; the kernel overwrites it with g.
                    momentumBuffers[i] = p.zerosLike().keep();
                    first = true;
                }
                buf = momentumBuffers[i].nativeHandle();
            }
            SgdNatives.sgdStep(p.nativeHandle(), g.nativeHandle(), buf, lr, momentum, dampening, weightDecay,
                    nesterov, first);
        }
    }

    /** Fills every existing gradient with zeros. Mirrors {@code zero_grad(set_to_none=False)}. */
    @Override
    public void zeroGrad() {
        for (Tensor p : params) {
            if (p.grad() != null) {
                p.grad().fill(0);
            }
        }
    }

    /** The parameters this optimizer updates (unmodifiable). Mirrors {@code param_groups[0]['params']}. */
    public List<Tensor> params() {
        return params;
    }

    /**
     * The momentum buffer of {@code param}, or null before its first step, without momentum, or
     * for a tensor this optimizer does not hold. Mirrors {@code state[p]['momentum_buffer']}.
     */
    public Tensor momentumBuffer(Tensor param) {
        for (int i = 0; i < params.size(); i++) {
            if (params.get(i) == param) {
                return momentumBuffers[i];
            }
        }
        return null;
    }

    /** The current learning rate. Mirrors {@code param_groups[0]['lr']}. */
    public double lr() {
        return lr;
    }

    /**
     * Changes the learning rate for later steps (for schedules).
     *
     * @throws IllegalArgumentException if lr is negative
     */
    public void setLr(double lr) {
        checkLr(lr);
        this.lr = lr;
    }

    /** The momentum factor. Mirrors {@code param_groups[0]['momentum']}. */
    public double momentum() {
        return momentum;
    }

    /** The dampening for momentum. Mirrors {@code param_groups[0]['dampening']}. */
    public double dampening() {
        return dampening;
    }

    /** The L2 penalty. Mirrors {@code param_groups[0]['weight_decay']}. */
    public double weightDecay() {
        return weightDecay;
    }

    /** Whether Nesterov momentum is used. Mirrors {@code param_groups[0]['nesterov']}. */
    public boolean nesterov() {
        return nesterov;
    }

    /**
     * {@inheritDoc}
     *
     * <p>SGD's: state {@code i -> {"momentum_buffer": buf}} for each parameter i that has a
     * momentum buffer (none before its first step or without momentum, as in PyTorch), and one
     * parameter group {@code {lr, momentum, dampening, weight_decay, nesterov, params: [0..n-1]}}.
     */
    @Override
    public OptimizerStateDict stateDict() {
        Map<Integer, Map<String, Tensor>> state = new LinkedHashMap<>();
        for (int i = 0; i < params.size(); i++) {
            if (momentumBuffers[i] != null) {
                state.put(i, Map.of(MOMENTUM_BUFFER, momentumBuffers[i]));
            }
        }
        List<Integer> indices = new ArrayList<>();
        for (int i = 0; i < params.size(); i++) {
            indices.add(i);
        }
        Map<String, Object> group = new LinkedHashMap<>();
        group.put("lr", lr);
        group.put("momentum", momentum);
        group.put("dampening", dampening);
        group.put("weight_decay", weightDecay);
        group.put("nesterov", nesterov);
        group.put("params", indices);
        return new OptimizerStateDict(NAME, state, List.of(group));
    }

    /**
     * {@inheritDoc}
     *
     * <p>Takes lr, momentum, dampening, weight_decay and nesterov from the state dict, as PyTorch
     * does, and a copy of each momentum buffer on its parameter's device; a parameter without
     * state gets its buffer at its next step.
     *
     * @throws IllegalArgumentException e.g. "SGD.loadStateDict: the state dict's parameter group
     *     has 3 parameters but this optimizer has 10 (loaded state dict contains a parameter group
     *     that doesn't match the size of optimizer's group)"
     */
    @Override
    public void loadStateDict(OptimizerStateDict stateDict) {
        if (!NAME.equals(stateDict.optimizer())) {
            throw new IllegalArgumentException("SGD.loadStateDict: the state dict is of optimizer '" + stateDict.optimizer()
                    + "', not SGD");
        }
        if (stateDict.paramGroups().size() != 1) {
            throw new IllegalArgumentException("SGD.loadStateDict: the state dict has " + stateDict.paramGroups().size()
                    + " parameter groups but this optimizer has 1");
        }
        Map<String, Object> group = stateDict.paramGroups().get(0);
        Object indices = group.get("params");
        int count = indices instanceof List<?> list ? list.size() : -1;
        if (count != params.size()) {
            throw new IllegalArgumentException("SGD.loadStateDict: the state dict's parameter group has " + count
                    + " parameters but this optimizer has " + params.size() + " (loaded state dict contains a parameter"
                    + " group that doesn't match the size of optimizer's group)");
        }
        double newLr = number(group, "lr");
        double newMomentum = number(group, "momentum");
        double newDampening = number(group, "dampening");
        double newWeightDecay = number(group, "weight_decay");
        if (!(group.get("nesterov") instanceof Boolean newNesterov)) {
            throw new IllegalArgumentException("SGD.loadStateDict: param_groups[0] has no boolean 'nesterov'");
        }
        checkHyperParameters(newLr, newMomentum, newDampening, newWeightDecay, newNesterov);
        stateDict.state().forEach((index, entries) -> {
            if (index < 0 || index >= params.size()) {
                throw new IllegalArgumentException("SGD.loadStateDict: state for parameter " + index + " but the"
                        + " optimizer has parameters 0.." + (params.size() - 1));
            }
            for (Map.Entry<String, Tensor> e : entries.entrySet()) {
                Tensor p = params.get(index);
                if (!e.getKey().equals(MOMENTUM_BUFFER)) {
                    throw new IllegalArgumentException("SGD.loadStateDict: unknown state '" + e.getKey() + "' for parameter "
                            + index + " (SGD keeps only " + MOMENTUM_BUFFER + ")");
                }
                Tensor buf = e.getValue();
                if (!java.util.Arrays.equals(buf.shape(), p.shape()) || buf.dtype() != p.dtype()) {
                    throw new IllegalArgumentException("SGD.loadStateDict: " + MOMENTUM_BUFFER + " of parameter " + index
                            + " is " + buf.describe() + " but the parameter is " + p.describe()
                            + " (a state dict of another model?)");
                }
            }
        });
        close();
        stateDict.state().forEach((index, entries) ->
                momentumBuffers[index] = params.get(index).zerosLike().keep().copyFrom(entries.get(MOMENTUM_BUFFER)));
        lr = newLr;
        momentum = newMomentum;
        dampening = newDampening;
        weightDecay = newWeightDecay;
        nesterov = newNesterov;
    }

    private static double number(Map<String, Object> group, String key) {
        if (!(group.get(key) instanceof Number n)) {
            throw new IllegalArgumentException("SGD.loadStateDict: param_groups[0] has no number '" + key + "'");
        }
        return n.doubleValue();
    }

    /** Frees the momentum buffers; a later step starts them afresh. */
    @Override
    public void close() {
        for (int i = 0; i < momentumBuffers.length; i++) {
            if (momentumBuffers[i] != null) {
                momentumBuffers[i].close();
                momentumBuffers[i] = null;
            }
        }
    }

    /** "SGD(lr=0.01, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=false)". */
    @Override
    public String toString() {
        return "SGD(lr=" + lr + ", momentum=" + momentum + ", dampening=" + dampening + ", weight_decay="
                + weightDecay + ", nesterov=" + nesterov + ")";
    }
}
