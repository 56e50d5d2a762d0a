package org.ddp4j.optim;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.Tensor;

/**
 * Adam with decoupled weight decay. Mirrors {@code torch.optim.AdamW}: before Adam's update
 * (without the L2 term), {@code p = p * (1 - lr * weight_decay)}; weight_decay defaults to 1e-2.
 * See {@link Adam} for the rest of the update; each parameter group has its own options (see
 * {@link Optimizer}).
 *
 * <p>State (exp_avg, exp_avg_sq, max_exp_avg_sq with amsgrad) is created at a parameter's first
 * step, lives outside any {@link org.ddp4j.tensor.Tensors#scope()}, and is freed by
 * {@link #close()}. Construct with PyTorch's defaults, or with {@link AbstractAdam.Options} (the
 * same type as {@code Adam.Options}):
 * {@code new AdamW(model.parameters(), AdamW.Options.defaults().lr(3e-4).amsgrad(true))}.
 */
public final class AdamW extends AbstractAdam {
    /** PyTorch's default weight_decay for AdamW. */
    public static final double DEFAULT_WEIGHT_DECAY = 1e-2;

    /** {@code torch.optim.AdamW(params)}: PyTorch's defaults. */
    public AdamW(List<Tensor> params) {
        this(params, Options.defaults());
    }

    /** {@code torch.optim.AdamW(params, lr=lr)}. */
    public AdamW(List<Tensor> params, double lr) {
        this(params, Options.defaults().lr(lr));
    }

    /**
     * {@code torch.optim.AdamW(params, lr, betas, eps, weight_decay, amsgrad)}; an unset
     * weight_decay (NaN, as in {@code Options.defaults()}) is 1e-2.
     *
     * @param params leaf tensors (usually {@code module.parameters()}); order defines state order
     * @throws IllegalArgumentException on an empty or non-leaf parameter list or an invalid
     *     hyper-parameter, with PyTorch's wording ("Invalid learning rate: -0.1", "Invalid beta
     *     parameter at index 0: 1.0", "Invalid epsilon value: -1.0", "Invalid weight_decay value: -1.0")
     */
    public AdamW(List<Tensor> params, Options options) {
        this(oneGroup(params), options);
    }

    /**
     * AdamW over parameter groups, each a Map of {@code params} and any of {@link #OPTION_NAMES};
     * options a group does not give come from {@code options}. Mirrors
     * {@code torch.optim.AdamW([{"params": decay}, {"params": noDecay, "weight_decay": 0.0}], **options)}.
     *
     * @throws IllegalArgumentException naming an unknown key and the allowed ones, and as {@link #AdamW(List, Options)}
     */
    public AdamW(Collection<? extends Map<String, ?>> paramGroups, Options options) {
        super("AdamW", true, paramGroups, options, DEFAULT_WEIGHT_DECAY);
    }
}
