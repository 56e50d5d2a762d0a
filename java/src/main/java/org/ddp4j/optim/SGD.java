package org.ddp4j.optim;

import java.util.List;
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
    private final List<Tensor> params;
    private final Tensor[] momentumBuffers;
    private double lr;
    private final double momentum;
    private final double dampening;
    private final double weightDecay;
    private final boolean nesterov;

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
        this.params = List.copyOf(params);
        this.momentumBuffers = new Tensor[params.size()];
        this.lr = lr;
        this.momentum = momentum;
        this.dampening = dampening;
        this.weightDecay = weightDecay;
        this.nesterov = nesterov;
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
