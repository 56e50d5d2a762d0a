package org.ddp4j.nn.functional;

import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * Dropout: zeroes each element with probability p and scales the kept ones by 1/(1-p), so the
 * expectation is unchanged. Mirrors {@code torch.nn.functional.dropout} (the mask comes from a
 * ddp4j {@link Generator}, so it cannot equal PyTorch's random stream).
 */
public final class DropoutFunction {
    private DropoutFunction() {}

    /**
     * {@code p} must lie in [0, 1]; PyTorch's wording otherwise.
     *
     * @throws IllegalArgumentException "dropout probability has to be between 0 and 1, but got 1.5"
     */
    public static void checkProbability(double p) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("dropout probability has to be between 0 and 1, but got " + p);
        }
    }

    /**
     * In training, {@code x * mask} where mask holds 0 (probability p) or {@code 1/(1-p)} (float32,
     * as PyTorch's {@code bernoulli_(1 - p).div_(1 - p)}), drawn on the CPU from generator and moved
     * to x's device; the backward multiplies the gradient by the same mask. Returns x itself when
     * not training, when p is 0 or when x is empty; p = 1 gives zeros.
     *
     * @param x float32 tensor of any shape, on any device
     * @param p probability of zeroing an element, in [0, 1]
     * @param training false in eval mode (identity)
     * @param generator source of the mask
     * @throws IllegalArgumentException if p is outside [0, 1] (see {@link #checkProbability})
     */
    public static Tensor apply(Tensor x, double p, boolean training, Generator generator) {
        checkProbability(p);
        if (!training || p == 0 || x.numel() == 0) {
            return x;
        }
        int n = Math.toIntExact(x.numel());
        float[] mask = new float[n];
        if (p < 1) {
            float keepProbability = (float) (1 - p);
            float scale = 1.0f / keepProbability;
            float[] u = generator.uniform(n, 0f, 1f);
            for (int i = 0; i < n; i++) {
                mask[i] = u[i] < keepProbability ? scale : 0f;
            }
        }
        Tensor onDevice = Tensor.of(mask, x.shape()).to(x.device());
        return x.mul(onDevice);
    }
}
