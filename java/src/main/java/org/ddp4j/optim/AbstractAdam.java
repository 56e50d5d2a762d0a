package org.ddp4j.optim;

import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.internal.AdamNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * What {@link Adam} and {@link AdamW} share: one {@link Options} shape, the per-parameter state
 * (step, exp_avg, exp_avg_sq, max_exp_avg_sq), the native update, and state dicts shaped as
 * PyTorch's. They differ only in how weight decay is applied (an L2 term in the gradient, or
 * decoupled) and in its default (0 for Adam, 1e-2 for AdamW).
 */
public abstract sealed class AbstractAdam extends Optimizer permits Adam, AdamW {
    /** PyTorch's names of the per-parameter state. */
    public static final String STEP = "step";
    public static final String EXP_AVG = "exp_avg";
    public static final String EXP_AVG_SQ = "exp_avg_sq";
    public static final String MAX_EXP_AVG_SQ = "max_exp_avg_sq";

    /** The options a parameter group may set, under PyTorch's names (besides {@code params}). */
    public static final List<String> OPTION_NAMES = List.copyOf(Options.defaults().asGroupOptions(0).keySet());

    private final boolean decoupled;
    /** Steps taken per parameter index (kept here, not as a tensor, so a step crosses JNI once per parameter). */
    private long[] steps = new long[0];

    /**
     * {@code torch.optim.Adam}'s and {@code AdamW}'s keyword arguments with their defaults (lr
     * 1e-3, betas (0.9, 0.999), eps 1e-8, amsgrad false; weight_decay the optimizer's: 0 for
     * Adam, 1e-2 for AdamW); each wither returns a changed copy. Values are checked when the
     * optimizer is built. Write it as {@code Adam.Options} or {@code AdamW.Options} (the same
     * type). Example: {@code new AdamW(params, AdamW.Options.defaults().lr(3e-4).betas(0.9, 0.95))}.
     *
     * @param weightDecay the decay, {@code >= 0}; NaN (as in {@link #defaults()}) means the
     *     optimizer's default, 0 for Adam and 1e-2 for AdamW, as PyTorch's keyword defaults
     */
    public record Options(double lr, double beta1, double beta2, double eps, double weightDecay, boolean amsgrad) {
        /** PyTorch's defaults; weight_decay is left to the optimizer (0 for Adam, 1e-2 for AdamW). */
        public static Options defaults() {
            return new Options(1e-3, 0.9, 0.999, 1e-8, Double.NaN, false);
        }

        /** Learning rate, {@code >= 0}. */
        public Options lr(double value) {
            return new Options(value, beta1, beta2, eps, weightDecay, amsgrad);
        }

        /** Coefficients of the running averages of the gradient and its square, each in [0, 1). */
        public Options betas(double b1, double b2) {
            return new Options(lr, b1, b2, eps, weightDecay, amsgrad);
        }

        /** Added to the denominator for numerical stability, {@code >= 0}. */
        public Options eps(double value) {
            return new Options(lr, beta1, beta2, value, weightDecay, amsgrad);
        }

        /** Weight decay, {@code >= 0}. */
        public Options weightDecay(double value) {
            return new Options(lr, beta1, beta2, eps, value, amsgrad);
        }

        /** Whether to use the AMSGrad variant (the maximum of past second moments). */
        public Options amsgrad(boolean value) {
            return new Options(lr, beta1, beta2, eps, weightDecay, value);
        }

        /** These options as a parameter group's, under PyTorch's names, with weight_decay resolved. */
        Map<String, Object> asGroupOptions(double defaultWeightDecay) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("lr", lr);
            out.put("betas", List.of(beta1, beta2));
            out.put("eps", eps);
            out.put("weight_decay", Double.isNaN(weightDecay) ? defaultWeightDecay : weightDecay);
            out.put("amsgrad", amsgrad);
            out.put("maximize", false);
            return out;
        }
    }

    AbstractAdam(String name, boolean decoupled, Collection<? extends Map<String, ?>> paramGroups, Options options,
            double defaultWeightDecay) {
        super(name, options.asGroupOptions(defaultWeightDecay), paramGroups);
        this.decoupled = decoupled;
    }

    /** PyTorch's checks and wording (torch.optim.Adam's constructor), for each group. */
    @Override
    protected void checkOptions(Map<String, Object> o) {
        double lr = (Double) o.get("lr");
        double eps = (Double) o.get("eps");
        List<?> betas = (List<?>) o.get("betas");
        double beta1 = (Double) betas.get(0);
        double beta2 = (Double) betas.get(1);
        if (!(lr >= 0)) {
            throw new IllegalArgumentException("Invalid learning rate: " + lr);
        }
        if (!(eps >= 0)) {
            throw new IllegalArgumentException("Invalid epsilon value: " + eps);
        }
        if (!(beta1 >= 0 && beta1 < 1)) {
            throw new IllegalArgumentException("Invalid beta parameter at index 0: " + beta1);
        }
        if (!(beta2 >= 0 && beta2 < 1)) {
            throw new IllegalArgumentException("Invalid beta parameter at index 1: " + beta2);
        }
        if (!((Double) o.get("weight_decay") >= 0)) {
            throw new IllegalArgumentException("Invalid weight_decay value: " + o.get("weight_decay"));
        }
        if ((Boolean) o.get("maximize")) {
            throw new IllegalArgumentException("maximize=True is not supported by ddp4j's Adam and AdamW");
        }
    }

    /**
     * One native in-place pass over every parameter of the group that has a gradient (PyTorch's
     * fused / foreach path, with the per-parameter update's bits); parameters without one keep no
     * state and do not count a step, as in PyTorch. State tensors are made at a parameter's first
     * step (zeros, outside any scope).
     */
    @Override
    protected void stepGroup(ParamGroup group, int firstIndex) {
        List<?> betas = (List<?>) group.get("betas");
        boolean amsgrad = group.flag("amsgrad");
        List<Tensor> params = group.params();
        growSteps();
        int n = 0;
        long[] p = new long[params.size()], g = new long[p.length], m = new long[p.length], v = new long[p.length];
        long[] vmax = amsgrad ? new long[p.length] : null;
        long[] step = new long[p.length];
        int[] index = new int[p.length];
        for (int j = 0; j < params.size(); j++) {
            Tensor param = params.get(j);
            if (param.grad() == null) {
                continue;
            }
            int i = firstIndex + j;
            Map<String, Tensor> state = state(i);
            if (!state.containsKey(EXP_AVG)) {
                // Untracked, so they survive the step's scope.
                state.put(EXP_AVG, param.zerosLike().keep());
                state.put(EXP_AVG_SQ, param.zerosLike().keep());
            }
            if (amsgrad && !state.containsKey(MAX_EXP_AVG_SQ)) {
                state.put(MAX_EXP_AVG_SQ, param.zerosLike().keep());
            }
            p[n] = TensorHandles.nativeHandle(param);
            g[n] = TensorHandles.nativeHandle(param.grad());
            m[n] = TensorHandles.nativeHandle(state.get(EXP_AVG));
            v[n] = TensorHandles.nativeHandle(state.get(EXP_AVG_SQ));
            if (amsgrad) {
                vmax[n] = TensorHandles.nativeHandle(state.get(MAX_EXP_AVG_SQ));
            }
            step[n] = steps[i] + 1;
            index[n++] = i;
        }
        if (n == 0) {
            return;
        }
        AdamNatives.adamSteps(Arrays.copyOf(p, n), Arrays.copyOf(g, n), Arrays.copyOf(m, n), Arrays.copyOf(v, n),
                amsgrad ? Arrays.copyOf(vmax, n) : null, Arrays.copyOf(step, n), group.lr(), (Double) betas.get(0),
                (Double) betas.get(1), group.number("eps"), group.number("weight_decay"), amsgrad, decoupled);
        for (int k = 0; k < n; k++) {
            steps[index[k]] = step[k];
        }
    }

    /** Makes room for groups added since the last step. */
    private void growSteps() {
        if (steps.length < params().size()) {
            steps = Arrays.copyOf(steps, params().size());
        }
    }

    /** exp_avg and exp_avg_sq for each host parameter (and max_exp_avg_sq under amsgrad). */
    @Override
    public long plannedStateBytes() {
        long bytes = 0;
        for (ParamGroup g : paramGroups()) {
            long groupBytes = Tensors.hostBytes(g.params());
            bytes += groupBytes * (g.flag("amsgrad") ? 3 : 2);
        }
        return bytes;
    }

    @Override
    public List<String> stateNames() {
        return List.of(STEP, EXP_AVG, EXP_AVG_SQ, MAX_EXP_AVG_SQ);
    }

    @Override
    public List<String> requiredStateNames(Map<String, Object> options) {
        return (Boolean) options.get("amsgrad") ? List.of(STEP, EXP_AVG, EXP_AVG_SQ, MAX_EXP_AVG_SQ)
                : List.of(STEP, EXP_AVG, EXP_AVG_SQ);
    }

    @Override
    public boolean isStepCount(String stateName) {
        return STEP.equals(stateName);
    }

    /** {@code step} first, as a new float32 scalar tensor (shape [], as PyTorch 1.13 keeps it), then the live tensors. */
    @Override
    protected Map<String, Tensor> savedState(int index) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        if (state(index).containsKey(EXP_AVG)) {
            out.put(STEP, Tensor.scalar(stepCount(index)));
            out.putAll(state(index));
        }
        return out;
    }

    @Override
    protected void restoreState(int index, Map<String, Tensor> saved) {
        growSteps();
        Map<String, Tensor> tensors = new LinkedHashMap<>(saved);
        steps[index] = (long) tensors.remove(STEP).item();
        super.restoreState(index, tensors);
    }

    /** Frees the state tensors and resets the step counts; a later step starts afresh. */
    @Override
    public void close() {
        super.close();
        Arrays.fill(steps, 0);
    }

    private long stepCount(int index) {
        return index < steps.length ? steps[index] : 0;
    }

    /** The first group's {@code betas[0]}. Mirrors {@code param_groups[0]['betas'][0]}. */
    public double beta1() {
        return (Double) ((List<?>) paramGroups().get(0).get("betas")).get(0);
    }

    /** The first group's {@code betas[1]}. Mirrors {@code param_groups[0]['betas'][1]}. */
    public double beta2() {
        return (Double) ((List<?>) paramGroups().get(0).get("betas")).get(1);
    }

    /** Mirrors {@code param_groups[0]['eps']}. */
    public double eps() {
        return paramGroups().get(0).number("eps");
    }

    /** Mirrors {@code param_groups[0]['weight_decay']}. */
    public double weightDecay() {
        return paramGroups().get(0).number("weight_decay");
    }

    /** Mirrors {@code param_groups[0]['amsgrad']}. */
    public boolean amsgrad() {
        return paramGroups().get(0).flag("amsgrad");
    }

    /** Steps taken by {@code param} (0 before its first, or for a tensor this optimizer does not hold). Mirrors {@code state[p]['step']}. */
    public long stepCount(Tensor param) {
        int i = indexOf(param);
        return i < 0 ? 0 : stepCount(i);
    }

    /** The first moment of {@code param}, or null before its first step. Mirrors {@code state[p]['exp_avg']}. */
    public Tensor expAvg(Tensor param) {
        return stateOf(param, EXP_AVG);
    }

    /** The second moment of {@code param}, or null before its first step. Mirrors {@code state[p]['exp_avg_sq']}. */
    public Tensor expAvgSq(Tensor param) {
        return stateOf(param, EXP_AVG_SQ);
    }

    /** PyTorch-like: "lr=0.001, betas=(0.9, 0.999), eps=1.0E-8, weight_decay=0.0, amsgrad=false". */
    @Override
    protected String describe(Map<String, Object> o) {
        List<?> betas = (List<?>) o.get("betas");
        return "lr=" + o.get("lr") + ", betas=(" + betas.get(0) + ", " + betas.get(1) + "), eps=" + o.get("eps")
                + ", weight_decay=" + o.get("weight_decay") + ", amsgrad=" + o.get("amsgrad");
    }
}
