package org.ddp4j.nn.functional;

import org.ddp4j.tensor.Tensor;

/**
 * Stateless differentiable functions, one static method per op: PyTorch's
 * {@code torch.nn.functional}. Each delegates to the op's class in this package, whose Javadoc
 * gives the details.
 */
public final class Functional {
    private Functional() {}

    /**
     * {@code x · wᵀ + b}: x float32 [*, in], w [out, in], b [out] or null → [*, out]. Mirrors
     * {@code F.linear}.
     *
     * @throws IllegalArgumentException on mismatched shapes (message names both shapes)
     */
    public static Tensor linear(Tensor x, Tensor w, Tensor b) {
        return LinearFunction.apply(x, w, b);
    }

    /** {@code x · wᵀ} without bias. Mirrors {@code F.linear(x, w)}. */
    public static Tensor linear(Tensor x, Tensor w) {
        return LinearFunction.apply(x, w, null);
    }

    /** {@code max(x, 0)} elementwise, float32 of x's shape. Mirrors {@code F.relu}. */
    public static Tensor relu(Tensor x) {
        return ReluFunction.apply(x);
    }

    /**
     * Mean squared error of two float32 tensors of the same shape, a scalar. Mirrors
     * {@code F.mse_loss}.
     *
     * @throws IllegalArgumentException if the shapes differ
     */
    public static Tensor mseLoss(Tensor input, Tensor target) {
        return MseLossFunction.apply(input, target);
    }

    /**
     * Mean cross entropy of float32 logits [N, C] against int64 class indices [N], a scalar.
     * Mirrors {@code F.cross_entropy}.
     *
     * @throws IllegalArgumentException on mismatched shapes or a target outside [0, C)
     */
    public static Tensor crossEntropy(Tensor logits, Tensor target) {
        return CrossEntropyFunction.apply(logits, target);
    }
}
