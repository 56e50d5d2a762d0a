package org.ddp4j.optim;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.internal.SgdNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

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
 * computed natively in place in one pass per parameter, each group with its own options (see
 * {@link Optimizer} for parameter groups). Momentum buffers are created on a
 * parameter's first step, live outside any {@link org.ddp4j.tensor.Tensors#scope()}, and are freed
 * by {@link #close()}.
 */
public final class SGD extends Optimizer {
    /** The class name stored in a state dict. */
    private static final String NAME = "SGD";
    /** PyTorch's name of the per-parameter momentum state. */
    public static final String MOMENTUM_BUFFER = "momentum_buffer";

    /** The options a parameter group may set, under PyTorch's names (besides {@code params}). */
    public static final List<String> OPTION_NAMES = List.copyOf(Options.defaults().asGroupOptions().keySet());

    /**
     * {@code torch.optim.SGD}'s keyword arguments with their defaults (lr 1e-3, as PyTorch 2.x;
     * momentum 0, dampening 0, weight_decay 0, nesterov false); each wither returns a changed
     * copy. Values are checked when the optimizer is built. Example:
     * {@code new SGD(model.parameters(), SGD.Options.defaults().lr(0.05).momentum(0.9).weightDecay(1e-4))}.
     */
    public record Options(double lr, double momentum, double dampening, double weightDecay, boolean nesterov) {
        /** PyTorch's defaults. */
        public static Options defaults() {
            return new Options(1e-3, 0, 0, 0, false);
        }

        /** Learning rate, {@code >= 0}. */
        public Options lr(double value) {
            return new Options(value, momentum, dampening, weightDecay, nesterov);
        }

        /** Momentum factor, {@code >= 0}. */
        public Options momentum(double value) {
            return new Options(lr, value, dampening, weightDecay, nesterov);
        }

        /** Dampening for momentum. */
        public Options dampening(double value) {
            return new Options(lr, momentum, value, weightDecay, nesterov);
        }

        /** L2 penalty, {@code >= 0}. */
        public Options weightDecay(double value) {
            return new Options(lr, momentum, dampening, value, nesterov);
        }

        /** Nesterov momentum (needs momentum {@code > 0} and dampening 0). */
        public Options nesterov(boolean value) {
            return new Options(lr, momentum, dampening, weightDecay, value);
        }

        /** These options as a parameter group's, under PyTorch's names (the per-group defaults). */
        Map<String, Object> asGroupOptions() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("lr", lr);
            out.put("momentum", momentum);
            out.put("dampening", dampening);
            out.put("weight_decay", weightDecay);
            out.put("nesterov", nesterov);
            return out;
        }
    }

    /**
     * SGD with {@code options}. Mirrors {@code torch.optim.SGD(params, **options)}.
     *
     * @throws IllegalArgumentException as {@link #SGD(List, double, double, double, double, boolean)}
     */
    public SGD(List<Tensor> params, Options options) {
        this(oneGroup(params), options);
    }

    /**
     * SGD over parameter groups, each a Map of {@code params} and any of {@link #OPTION_NAMES};
     * options a group does not give come from {@code options}. Mirrors
     * {@code torch.optim.SGD([{"params": ...}, {"params": ..., "lr": ...}], **options)}. Example:
     * {@code new SGD(List.of(Map.of("params", body), Map.of("params", head, "lr", 0.1)), SGD.Options.defaults().lr(0.01))}.
     *
     * @throws IllegalArgumentException naming an unknown key and the allowed ones (e.g. "SGD: unknown
     *     parameter group option 'weight_decy' (allowed: params, lr, momentum, dampening,
     *     weight_decay, nesterov)"), and as {@link #SGD(List, double, double, double, double, boolean)}
     */
    public SGD(Collection<? extends Map<String, ?>> paramGroups, Options options) {
        super(NAME, options.asGroupOptions(), paramGroups);
    }

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
        this(params, new Options(lr, momentum, dampening, weightDecay, nesterov));
    }

    /** PyTorch's checks and wording (torch.optim.SGD's constructor), for each group. */
    @Override
    protected void checkOptions(Map<String, Object> o) {
        double lr = (Double) o.get("lr");
        double momentum = (Double) o.get("momentum");
        if (!(lr >= 0)) {
            throw new IllegalArgumentException("Invalid learning rate: " + lr);
        }
        if (!(momentum >= 0)) {
            throw new IllegalArgumentException("Invalid momentum value: " + momentum);
        }
        if (!((Double) o.get("weight_decay") >= 0)) {
            throw new IllegalArgumentException("Invalid weight_decay value: " + o.get("weight_decay"));
        }
        if ((Boolean) o.get("nesterov") && (momentum <= 0 || (Double) o.get("dampening") != 0)) {
            throw new IllegalArgumentException("Nesterov momentum requires a momentum and zero dampening");
        }
    }

    /** One native in-place pass per parameter with a gradient; a momentum buffer is made at its first step. */
    @Override
    protected void stepGroup(ParamGroup group, int firstIndex) {
        double lr = group.lr();
        double momentum = group.number("momentum");
        double dampening = group.number("dampening");
        double weightDecay = group.number("weight_decay");
        boolean nesterov = group.flag("nesterov");
        List<Tensor> params = group.params();
        for (int j = 0; j < params.size(); j++) {
            Tensor p = params.get(j);
            Tensor g = p.grad();
            if (g == null) {
                continue;
            }
            boolean first = false;
            long buf = 0;
            if (momentum != 0) {
                Map<String, Tensor> state = state(firstIndex + j);
                Tensor b = state.get(MOMENTUM_BUFFER);
                if (b == null) {
                    // Untracked, so it survives the step's scope; the kernel overwrites it with g.
                    b = p.zerosLike().keep();
                    state.put(MOMENTUM_BUFFER, b);
                    first = true;
                }
                buf = TensorHandles.nativeHandle(b);
            }
            SgdNatives.sgdStep(TensorHandles.nativeHandle(p), TensorHandles.nativeHandle(g), buf, lr, momentum, dampening, weightDecay,
                    nesterov, first);
        }
    }

    /** A momentum buffer for each host parameter of a group with momentum. */
    @Override
    public long plannedStateBytes() {
        long bytes = 0;
        for (ParamGroup g : paramGroups()) {
            if (g.number("momentum") != 0) {
                bytes += Tensors.hostBytes(g.params());
            }
        }
        return bytes;
    }

    @Override
    public List<String> stateNames() {
        return List.of(MOMENTUM_BUFFER);
    }

    /**
     * The momentum buffer of {@code param}, or null before its first step, without momentum, or
     * for a tensor this optimizer does not hold. Mirrors {@code state[p]['momentum_buffer']}.
     */
    public Tensor momentumBuffer(Tensor param) {
        return stateOf(param, MOMENTUM_BUFFER);
    }

    /** The first group's momentum factor. Mirrors {@code param_groups[0]['momentum']}. */
    public double momentum() {
        return paramGroups().get(0).number("momentum");
    }

    /** The first group's dampening for momentum. Mirrors {@code param_groups[0]['dampening']}. */
    public double dampening() {
        return paramGroups().get(0).number("dampening");
    }

    /** The first group's L2 penalty. Mirrors {@code param_groups[0]['weight_decay']}. */
    public double weightDecay() {
        return paramGroups().get(0).number("weight_decay");
    }

    /** Whether the first group uses Nesterov momentum. Mirrors {@code param_groups[0]['nesterov']}. */
    public boolean nesterov() {
        return paramGroups().get(0).flag("nesterov");
    }
}
