package org.ddp4j.optim;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.Tensor;

/**
 * Adam: adaptive moment estimation. Mirrors {@code torch.optim.Adam} (PyTorch 1.13's single-tensor update): for each parameter p with gradient g at step t (1 first),
 *
 * <pre>
 *   g = g + weight_decay * p                (an L2 term in the gradient)
 *   m = beta1 * m + (1 - beta1) * g
 *   v = beta2 * v + (1 - beta2) * g * g
 *   vmax = max(vmax, v)                     (amsgrad; then vmax replaces v below)
 *   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * </pre>
 *
 * computed natively in place in one pass per parameter (float32), each parameter group with its
 * own options (see {@link Optimizer}). For decoupled weight decay use {@link AdamW}.
 *
 * <p>State (exp_avg, exp_avg_sq, max_exp_avg_sq with amsgrad) is created at a parameter's first
 * step, lives outside any {@link org.ddp4j.tensor.Tensors#scope()}, and is freed by
 * {@link #close()}. Construct with PyTorch's defaults, or with {@link AbstractAdam.Options}:
 * {@code new Adam(model.parameters(), Adam.Options.defaults().lr(3e-4).amsgrad(true))}.
 */
public final class Adam extends AbstractAdam {
    /** {@code torch.optim.Adam(params)}: PyTorch's defaults. */
    public Adam(List<Tensor> params) {
        this(params, Options.defaults());
    }

    /** {@code torch.optim.Adam(params, lr=lr)}. */
    public Adam(List<Tensor> params, double lr) {
        this(params, Options.defaults().lr(lr));
    }

    /**
     * {@code torch.optim.Adam(params, lr, betas, eps, weight_decay, amsgrad)}; an unset
     * weight_decay (NaN, as in {@code Options.defaults()}) is 0.
     *
     * @param params leaf tensors (usually {@code module.parameters()}); order defines state order
     * @throws IllegalArgumentException on an empty or non-leaf parameter list or an invalid
     *     hyper-parameter, with PyTorch's wording ("Invalid learning rate: -0.1", "Invalid beta
     *     parameter at index 0: 1.0", "Invalid epsilon value: -1.0", "Invalid weight_decay value: -1.0")
     */
    public Adam(List<Tensor> params, Options options) {
        this(oneGroup(params), options);
    }

    /**
     * Adam over parameter groups, each a Map of {@code params} and any of {@link #OPTION_NAMES}
     * ({@code betas} as a List of two numbers); options a group does not give come from
     * {@code options}. Mirrors {@code torch.optim.Adam([{"params": ...}, ...], **options)}.
     *
     * @throws IllegalArgumentException naming an unknown key and the allowed ones, and as {@link #Adam(List, Options)}
     */
    public Adam(Collection<? extends Map<String, ?>> paramGroups, Options options) {
        super("Adam", false, paramGroups, options, 0);
    }
}
