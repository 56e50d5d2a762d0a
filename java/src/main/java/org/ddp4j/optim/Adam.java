package org.ddp4j.optim;

import java.util.List;
import org.ddp4j.tensor.Tensor;

/**
 * Adam: adaptive moment estimation. Mirrors {@code torch.optim.Adam} (PyTorch 1.13's single-tensor update): for each parameter p with gradient g at step t (1 first),

 * <pre>
 *   g = g + weight_decay * p                (an L2 term in the gradient)
 *   m = beta1 * m + (1 - beta1) * g
 *   v = beta2 * v + (1 - beta2) * g * g
 *   vmax = max(vmax, v)                     (amsgrad; then vmax replaces v below)
 *   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * </pre>
 *
 * computed natively in place in one pass per parameter (float32). For decoupled weight decay use
 * {@link AdamW}.
 *
 * <p>State (exp_avg, exp_avg_sq, max_exp_avg_sq with amsgrad) is created at a parameter's first
 * step, lives outside any {@link org.ddp4j.tensor.Tensors#scope()}, and is freed by
 * {@link #close()}. Construct with PyTorch's defaults, or with {@link Options}:
 * {@code new Adam(model.parameters(), Adam.Options.defaults().lr(3e-4).amsgrad(true))}.
 */
public final class Adam extends AbstractAdam {
    /**
     * {@code torch.optim.Adam}'s keyword arguments with its defaults (lr 1e-3, betas (0.9, 0.999),
     * eps 1e-8, weight_decay 0, amsgrad false); each wither returns a changed copy. Values are
     * checked when the optimizer is built.
     */
    public record Options(double lr, double beta1, double beta2, double eps, double weightDecay, boolean amsgrad) {
        /** PyTorch's defaults. */
        public static Options defaults() {
            return new Options(1e-3, 0.9, 0.999, 1e-8, 0, false);
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

    /** {@code torch.optim.Adam(params)}: PyTorch's defaults. */
    public Adam(List<Tensor> params) {
        this(params, Options.defaults());
    }

    /** {@code torch.optim.Adam(params, lr=lr)}. */
    public Adam(List<Tensor> params, double lr) {
        this(params, Options.defaults().lr(lr));
    }

    /**
     * {@code torch.optim.Adam(params, lr, betas, eps, weight_decay, amsgrad)}.
     *
     * @param params leaf tensors (usually {@code module.parameters()}); order defines state order
     * @throws IllegalArgumentException on an empty or non-leaf parameter list or an invalid
     *     hyper-parameter, with PyTorch's wording ("Invalid learning rate: -0.1", "Invalid beta
     *     parameter at index 0: 1.0", "Invalid epsilon value: -1.0", "Invalid weight_decay value: -1.0")
     */
    public Adam(List<Tensor> params, Options options) {
        super("Adam", false, params, options.lr(), options.beta1(), options.beta2(), options.eps(), options.weightDecay(),
                options.amsgrad());
    }
}
