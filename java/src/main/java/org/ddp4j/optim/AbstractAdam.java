package org.ddp4j.optim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.internal.AdamNatives;
import org.ddp4j.tensor.Tensor;

/**
 * What {@link Adam} and {@link AdamW} share: the per-parameter state (step, exp_avg, exp_avg_sq,
 * max_exp_avg_sq), the native update, and state dicts shaped as PyTorch's. They differ only in
 * how weight decay is applied (an L2 term in the gradient, or decoupled) and in its default.
 */
public abstract sealed class AbstractAdam implements Optimizer permits Adam, AdamW {
    /** PyTorch's names of the per-parameter state. */
    public static final String STEP = "step";
    public static final String EXP_AVG = "exp_avg";
    public static final String EXP_AVG_SQ = "exp_avg_sq";
    public static final String MAX_EXP_AVG_SQ = "max_exp_avg_sq";

    private final String name;
    private final boolean decoupled;
    private final List<Tensor> params;
    private final long[] steps;
    private final Tensor[] expAvg;
    private final Tensor[] expAvgSq;
    private final Tensor[] maxExpAvgSq;
    private double lr;
    private double beta1;
    private double beta2;
    private double eps;
    private double weightDecay;
    private boolean amsgrad;

    AbstractAdam(String name, boolean decoupled, List<Tensor> params, double lr, double beta1, double beta2, double eps,
            double weightDecay, boolean amsgrad) {
        this.name = name;
        this.decoupled = decoupled;
        if (params.isEmpty()) {
            throw new IllegalArgumentException(name + " got an empty parameter list");
        }
        for (Tensor p : params) {
            if (!p.isLeaf()) {
                throw new IllegalArgumentException(name + " can't optimize a non-leaf tensor (" + p.describe()
                        + ", produced by " + p.gradFn().name() + "); pass parameters, e.g. module.parameters()");
            }
        }
        checkHyperParameters(lr, beta1, beta2, eps, weightDecay);
        this.params = List.copyOf(params);
        int n = params.size();
        this.steps = new long[n];
        this.expAvg = new Tensor[n];
        this.expAvgSq = new Tensor[n];
        this.maxExpAvgSq = new Tensor[n];
        this.lr = lr;
        this.beta1 = beta1;
        this.beta2 = beta2;
        this.eps = eps;
        this.weightDecay = weightDecay;
        this.amsgrad = amsgrad;
    }

    /** PyTorch's checks and wording (torch.optim.Adam's constructor). */
    static void checkHyperParameters(double lr, double beta1, double beta2, double eps, double weightDecay) {
        checkLr(lr);
        if (!(eps >= 0)) {
            throw new IllegalArgumentException("Invalid epsilon value: " + eps);
        }
        if (!(beta1 >= 0 && beta1 < 1)) {
            throw new IllegalArgumentException("Invalid beta parameter at index 0: " + beta1);
        }
        if (!(beta2 >= 0 && beta2 < 1)) {
            throw new IllegalArgumentException("Invalid beta parameter at index 1: " + beta2);
        }
        if (!(weightDecay >= 0)) {
            throw new IllegalArgumentException("Invalid weight_decay value: " + weightDecay);
        }
    }

    private static void checkLr(double lr) {
        if (!(lr >= 0)) {
            throw new IllegalArgumentException("Invalid learning rate: " + lr);
        }
    }

    /**
     * Updates every parameter whose {@code grad()} is non-null, in place (no autograd); parameters
     * without a gradient are skipped, keep no state and do not count a step, as in PyTorch. State
     * tensors are created at a parameter's first step (zeros, outside any scope).
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
            if (expAvg[i] == null) {
                // Untracked, so they survive the step's scope.
                expAvg[i] = p.zerosLike().keep();
                expAvgSq[i] = p.zerosLike().keep();
            }
            if (amsgrad && maxExpAvgSq[i] == null) {
                maxExpAvgSq[i] = p.zerosLike().keep();
            }
            long step = steps[i] + 1;
            AdamNatives.adamStep(p.nativeHandle(), g.nativeHandle(), expAvg[i].nativeHandle(), expAvgSq[i].nativeHandle(),
                    amsgrad ? maxExpAvgSq[i].nativeHandle() : 0, lr, beta1, beta2, eps, weightDecay, amsgrad, decoupled,
                    step);
            steps[i] = step;
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

    @Override
    public double lr() {
        return lr;
    }

    @Override
    public void setLr(double lr) {
        checkLr(lr);
        this.lr = lr;
    }

    /** Mirrors {@code param_groups[0]['betas'][0]}. */
    public double beta1() {
        return beta1;
    }

    /** Mirrors {@code param_groups[0]['betas'][1]}. */
    public double beta2() {
        return beta2;
    }

    /** Mirrors {@code param_groups[0]['eps']}. */
    public double eps() {
        return eps;
    }

    /** Mirrors {@code param_groups[0]['weight_decay']}. */
    public double weightDecay() {
        return weightDecay;
    }

    /** Mirrors {@code param_groups[0]['amsgrad']}. */
    public boolean amsgrad() {
        return amsgrad;
    }

    /** Steps taken by {@code param} (0 before its first, or for a tensor this optimizer does not hold). */
    public long stepCount(Tensor param) {
        int i = indexOf(param);
        return i < 0 ? 0 : steps[i];
    }

    /** The first moment of {@code param}, or null before its first step. Mirrors {@code state[p]['exp_avg']}. */
    public Tensor expAvg(Tensor param) {
        int i = indexOf(param);
        return i < 0 ? null : expAvg[i];
    }

    /** The second moment of {@code param}, or null before its first step. Mirrors {@code state[p]['exp_avg_sq']}. */
    public Tensor expAvgSq(Tensor param) {
        int i = indexOf(param);
        return i < 0 ? null : expAvgSq[i];
    }

    private int indexOf(Tensor param) {
        for (int i = 0; i < params.size(); i++) {
            if (params.get(i) == param) {
                return i;
            }
        }
        return -1;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Adam's and AdamW's: state {@code i -> {step, exp_avg, exp_avg_sq[, max_exp_avg_sq]}} for
     * each parameter i that has taken a step ({@code step} a new float32 scalar tensor, shape [], as
     * PyTorch 1.13 keeps it; the others the live tensors), and one parameter group
     * {@code {lr, betas: [b1, b2], eps, weight_decay, amsgrad, maximize: false, params: [0..n-1]}}.
     */
    @Override
    public OptimizerStateDict stateDict() {
        Map<Integer, Map<String, Tensor>> state = new LinkedHashMap<>();
        for (int i = 0; i < params.size(); i++) {
            if (expAvg[i] != null) {
                Map<String, Tensor> entries = new LinkedHashMap<>();
                entries.put(STEP, Tensor.scalar(steps[i]));
                entries.put(EXP_AVG, expAvg[i]);
                entries.put(EXP_AVG_SQ, expAvgSq[i]);
                if (maxExpAvgSq[i] != null) {
                    entries.put(MAX_EXP_AVG_SQ, maxExpAvgSq[i]);
                }
                state.put(i, entries);
            }
        }
        List<Integer> indices = new ArrayList<>();
        for (int i = 0; i < params.size(); i++) {
            indices.add(i);
        }
        Map<String, Object> group = new LinkedHashMap<>();
        group.put("lr", lr);
        group.put("betas", List.of(beta1, beta2));
        group.put("eps", eps);
        group.put("weight_decay", weightDecay);
        group.put("amsgrad", amsgrad);
        group.put("maximize", false);
        group.put("params", indices);
        return new OptimizerStateDict(name, state, List.of(group));
    }

    /**
     * {@inheritDoc}
     *
     * <p>Takes lr, betas, eps, weight_decay and amsgrad from the state dict, as PyTorch does, and
     * a copy of each state tensor on its parameter's device; a parameter without state starts
     * afresh at its next step. All checks run before anything changes.
     *
     * @throws IllegalArgumentException e.g. "Adam.loadStateDict: the state dict is of optimizer
     *     'SGD', not Adam", "Adam.loadStateDict: exp_avg of parameter 1 is float32 [3] but the
     *     parameter is float32 [10] (a state dict of another model?)"
     */
    @Override
    public void loadStateDict(OptimizerStateDict stateDict) {
        String where = name + ".loadStateDict: ";
        if (!name.equals(stateDict.optimizer())) {
            throw new IllegalArgumentException(where + "the state dict is of optimizer '" + stateDict.optimizer()
                    + "', not " + name);
        }
        if (stateDict.paramGroups().size() != 1) {
            throw new IllegalArgumentException(where + "the state dict has " + stateDict.paramGroups().size()
                    + " parameter groups but this optimizer has 1");
        }
        Map<String, Object> group = stateDict.paramGroups().get(0);
        int count = group.get("params") instanceof List<?> list ? list.size() : -1;
        if (count != params.size()) {
            throw new IllegalArgumentException(where + "the state dict's parameter group has " + count
                    + " parameters but this optimizer has " + params.size() + " (loaded state dict contains a parameter"
                    + " group that doesn't match the size of optimizer's group)");
        }
        double newLr = number(where, group, "lr");
        double newEps = number(where, group, "eps");
        double newWeightDecay = number(where, group, "weight_decay");
        if (!(group.get("betas") instanceof List<?> betas && betas.size() == 2 && betas.get(0) instanceof Number b1
                && betas.get(1) instanceof Number b2)) {
            throw new IllegalArgumentException(where + "param_groups[0] has no 'betas' list of two numbers");
        }
        if (!(group.get("amsgrad") instanceof Boolean newAmsgrad)) {
            throw new IllegalArgumentException(where + "param_groups[0] has no boolean 'amsgrad'");
        }
        if (Boolean.TRUE.equals(group.get("maximize"))) {
            throw new IllegalArgumentException(where + "the state dict has maximize=True, which ddp4j's " + name
                    + " does not support");
        }
        checkHyperParameters(newLr, b1.doubleValue(), b2.doubleValue(), newEps, newWeightDecay);
        stateDict.state().forEach((index, entries) -> {
            if (index < 0 || index >= params.size()) {
                throw new IllegalArgumentException(where + "state for parameter " + index + " but the optimizer has"
                        + " parameters 0.." + (params.size() - 1));
            }
            Tensor p = params.get(index);
            for (String required : newAmsgrad ? List.of(STEP, EXP_AVG, EXP_AVG_SQ, MAX_EXP_AVG_SQ)
                    : List.of(STEP, EXP_AVG, EXP_AVG_SQ)) {
                if (!entries.containsKey(required)) {
                    throw new IllegalArgumentException(where + "parameter " + index + " has no '" + required + "' state"
                            + (required.equals(MAX_EXP_AVG_SQ) ? " (saved without amsgrad?)" : ""));
                }
            }
            for (Map.Entry<String, Tensor> e : entries.entrySet()) {
                Tensor t = e.getValue();
                switch (e.getKey()) {
                    case STEP -> {
                        if (t.numel() != 1 || !(t.item() >= 0) || t.item() != Math.rint(t.item())) {
                            throw new IllegalArgumentException(where + "step of parameter " + index + " must be one"
                                    + " non-negative whole number, got " + t.describe());
                        }
                    }
                    case EXP_AVG, EXP_AVG_SQ, MAX_EXP_AVG_SQ -> {
                        if (!Arrays.equals(t.shape(), p.shape()) || t.dtype() != p.dtype()) {
                            throw new IllegalArgumentException(where + e.getKey() + " of parameter " + index + " is "
                                    + t.describe() + " but the parameter is " + p.describe()
                                    + " (a state dict of another model?)");
                        }
                    }
                    default -> throw new IllegalArgumentException(where + "unknown state '" + e.getKey()
                            + "' for parameter " + index + " (" + name + " keeps " + STEP + ", " + EXP_AVG + ", "
                            + EXP_AVG_SQ + " and " + MAX_EXP_AVG_SQ + ")");
                }
            }
        });
        close();
        stateDict.state().forEach((index, entries) -> {
            Tensor p = params.get(index);
            steps[index] = (long) entries.get(STEP).item();
            expAvg[index] = p.zerosLike().keep().copyFrom(entries.get(EXP_AVG));
            expAvgSq[index] = p.zerosLike().keep().copyFrom(entries.get(EXP_AVG_SQ));
            Tensor max = entries.get(MAX_EXP_AVG_SQ);
            if (max != null) {
                maxExpAvgSq[index] = p.zerosLike().keep().copyFrom(max);
            }
        });
        lr = newLr;
        beta1 = b1.doubleValue();
        beta2 = b2.doubleValue();
        eps = newEps;
        weightDecay = newWeightDecay;
        amsgrad = newAmsgrad;
    }

    private static double number(String where, Map<String, Object> group, String key) {
        if (!(group.get(key) instanceof Number n)) {
            throw new IllegalArgumentException(where + "param_groups[0] has no number '" + key + "'");
        }
        return n.doubleValue();
    }

    /** Frees the state tensors and resets the step counts; a later step starts afresh. */
    @Override
    public void close() {
        for (int i = 0; i < params.size(); i++) {
            for (Tensor[] state : List.of(expAvg, expAvgSq, maxExpAvgSq)) {
                if (state[i] != null) {
                    state[i].close();
                    state[i] = null;
                }
            }
            steps[i] = 0;
        }
    }

    /** E.g. "Adam(lr=0.001, betas=(0.9, 0.999), eps=1.0E-8, weight_decay=0.0, amsgrad=false)". */
    @Override
    public String toString() {
        return name + "(lr=" + lr + ", betas=(" + beta1 + ", " + beta2 + "), eps=" + eps + ", weight_decay=" + weightDecay
                + ", amsgrad=" + amsgrad + ")";
    }
}
