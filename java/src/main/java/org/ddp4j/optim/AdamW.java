package org.ddp4j.optim;

import java.util.List;
import org.ddp4j.tensor.Tensor;

/**
 * Adam with decoupled weight decay. Mirrors {@code torch.optim.AdamW}: before Adam's update
 * (without the L2 term), {@code p = p * (1 - lr * weight_decay)}; weight_decay defaults to 1e-2.
 * See {@link Adam} for the rest of the update.
 *
 * <p>State (exp_avg, exp_avg_sq, max_exp_avg_sq with amsgrad) is created at a parameter's first
 * step, lives outside any {@link org.ddp4j.tensor.Tensors#scope()}, and is freed by
 * {@link #close()}. Construct with PyTorch's defaults, or with {@link Options}:
 * {@code new AdamW(model.parameters(), AdamW.Options.defaults().lr(3e-4).amsgrad(true))}.
 */
public final class AdamW extends AbstractAdam {
    /**
     * {@code torch.optim.AdamW}'s keyword arguments with its defaults (lr 1e-3, betas (0.9, 0.999),
     * eps 1e-8, weight_decay 1e-2, amsgrad false); each wither returns a changed copy. Values are
     * checked when the optimizer is built.
     */
    public record Options(double lr, double beta1, double beta2, double eps, double weightDecay, boolean amsgrad) {
        /** PyTorch's defaults. */
        public static Options defaults() {
            return new Options(1e-3, 0.9, 0.999, 1e-8, 1e-2, false);
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
    }

    /** {@code torch.optim.AdamW(params)}: PyTorch's defaults. */
    public AdamW(List<Tensor> params) {
        this(params, Options.defaults());
    }

    /** {@code torch.optim.AdamW(params, lr=lr)}. */
    public AdamW(List<Tensor> params, double lr) {
        this(params, Options.defaults().lr(lr));
    }

    /**
     * {@code torch.optim.AdamW(params, lr, betas, eps, weight_decay, amsgrad)}.
     *
     * @param params leaf tensors (usually {@code module.parameters()}); order defines state order
     * @throws IllegalArgumentException on an empty or non-leaf parameter list or an invalid
     *     hyper-parameter, with PyTorch's wording ("Invalid learning rate: -0.1", "Invalid beta
     *     parameter at index 0: 1.0", "Invalid epsilon value: -1.0", "Invalid weight_decay value: -1.0")
     */
    public AdamW(List<Tensor> params, Options options) {
        super("AdamW", true, params, options.lr(), options.beta1(), options.beta2(), options.eps(), options.weightDecay(),
                options.amsgrad());
    }
}
