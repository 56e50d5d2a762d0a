package org.ddp4j.nn;

import java.util.Arrays;
import org.ddp4j.nn.functional.LayerNormFunction;
import org.ddp4j.tensor.Tensor;

/**
 * Layer normalisation over the trailing dims. Mirrors {@code torch.nn.LayerNorm(normalized_shape,
 * eps, elementwise_affine)}: parameters "weight" (ones) and "bias" (zeros) of normalized_shape when
 * elementwise_affine, none otherwise.
 */
public class LayerNorm extends Module {
    private final long[] normalizedShape;
    private final double eps;
    private final boolean elementwiseAffine;

    /** {@code LayerNorm(dim)}: over the last dim of size dim, eps 1e-5, with weight and bias. */
    public LayerNorm(long dim) {
        this(new long[] {dim}, 1e-5, true);
    }

    /**
     * @param normalizedShape the trailing sizes of the input to normalise over (at least one)
     * @param eps added to the variance
     * @param elementwiseAffine whether to learn a per-element weight and bias
     * @throws IllegalArgumentException if normalizedShape is empty or holds a negative size
     */
    public LayerNorm(long[] normalizedShape, double eps, boolean elementwiseAffine) {
        if (normalizedShape.length == 0 || Arrays.stream(normalizedShape).anyMatch(n -> n < 0)) {
            throw new IllegalArgumentException("LayerNorm: normalized_shape must hold one or more non-negative sizes, got "
                    + Arrays.toString(normalizedShape));
        }
        this.normalizedShape = normalizedShape.clone();
        this.eps = eps;
        this.elementwiseAffine = elementwiseAffine;
        if (elementwiseAffine) {
            registerParameter("weight", Tensor.ones(normalizedShape).keep());
            registerParameter("bias", Tensor.zeros(normalizedShape).keep());
        }
    }

    /**
     * Normalises.
     *
     * @param input float32 [*, normalized_shape...]
     * @return float32 of input's shape
     * @throws IllegalArgumentException if input does not end with normalized_shape
     */
    @Override
    public Tensor forward(Tensor input) {
        return LayerNormFunction.apply(input, normalizedShape, weight(), bias(), eps);
    }

    /** The weight (ones at first), or null without elementwise_affine. Mirrors {@code LayerNorm.weight}. */
    public Tensor weight() {
        return parameter("weight");
    }

    /** The bias (zeros at first), or null without elementwise_affine. Mirrors {@code LayerNorm.bias}. */
    public Tensor bias() {
        return parameter("bias");
    }

    /** Mirrors {@code LayerNorm.normalized_shape}. */
    public long[] normalizedShape() {
        return normalizedShape.clone();
    }

    /** Mirrors {@code LayerNorm.eps}. */
    public double eps() {
        return eps;
    }

    /** PyTorch's extra_repr, e.g. "(768,), eps=1e-05, elementwise_affine=True". */
    @Override
    protected String extraRepr() {
        StringBuilder shape = new StringBuilder("(");
        for (int i = 0; i < normalizedShape.length; i++) {
            shape.append(i > 0 ? ", " : "").append(normalizedShape[i]);
        }
        shape.append(normalizedShape.length == 1 ? ",)" : ")");
        return shape + ", eps=" + ReprFormat.pythonFloat(eps) + ", elementwise_affine="
                + (elementwiseAffine ? "True" : "False");
    }
}
