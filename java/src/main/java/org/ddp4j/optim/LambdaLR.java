package org.ddp4j.optim;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.IntToDoubleFunction;

/**
 * Sets each group's lr to its initial lr times a function of the epoch: {@code lr = base_lr *
 * lrLambda(last_epoch)}. Mirrors {@code torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)}.
 * nanoGPT's schedule (linear warm-up, cosine decay to {@code min_lr}, then constant) as a factor:
 * <pre>{@code
 * new LambdaLR(opt, it -> it < warmup ? (it + 1) / (double) (warmup + 1)
 *         : it > decay ? minLr / maxLr
 *         : minLr / maxLr + 0.5 * (1 + Math.cos(Math.PI * (it - warmup) / (decay - warmup))) * (1 - minLr / maxLr));
 * }</pre>
 * The factor may exceed 1. Its state dict holds the position and base lrs but not the functions (code,
 * as PyTorch saves no plain function): make the LambdaLR with the same functions before loading.
 */
public final class LambdaLR extends LRScheduler {
    private final List<IntToDoubleFunction> lrLambdas;

    /** One factor function for every parameter group. */
    public LambdaLR(Optimizer optimizer, IntToDoubleFunction lrLambda) {
        this(optimizer, Collections.nCopies(optimizer.paramGroups().size(), lrLambda));
    }

    /**
     * One factor function per parameter group, in {@code paramGroups()} order.
     *
     * @throws IllegalArgumentException "LambdaLR: expected 2 lr_lambdas, one per parameter group, got 1"
     *     (PyTorch's "Expected 2 lr_lambdas, but got 1")
     * @throws IllegalArgumentException if a function gives a negative, NaN or infinite factor at epoch 0,
     *     naming the group (the same at a later {@link #step()}, from {@link ParamGroup#setLr})
     */
    public LambdaLR(Optimizer optimizer, List<IntToDoubleFunction> lrLambdas) {
        super(check(optimizer, lrLambdas));
        this.lrLambdas = List.copyOf(lrLambdas);
        initialStep();
    }

    private static Optimizer check(Optimizer optimizer, List<IntToDoubleFunction> lrLambdas) {
        int groups = optimizer.paramGroups().size();
        if (lrLambdas.size() != groups) {
            throw new IllegalArgumentException("LambdaLR: expected " + groups + " lr_lambdas, one per parameter group, got "
                    + lrLambdas.size());
        }
        return optimizer;
    }

    @Override
    protected double computeLr(int group, double lr, double baseLr) {
        double factor = lrLambdas.get(group).applyAsDouble(lastEpoch());
        if (!(factor >= 0) || Double.isInfinite(factor)) {
            throw new IllegalArgumentException("LambdaLR: lr_lambda of parameter group " + group + " gave " + factor
                    + " at epoch " + lastEpoch() + "; the factor multiplies the initial lr, so it must be a finite number >= 0");
        }
        return baseLr * factor;
    }

    /** Nothing: the functions are code. */
    @Override
    protected void putHyperParameters(Map<String, Object> out) {}

    @Override
    protected void loadHyperParameters(Map<String, ?> state) {}
}
