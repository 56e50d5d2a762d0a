package org.ddp4j.nn;

import org.ddp4j.nn.functional.LinearFunction;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * A fully connected layer {@code y = x · weightᵀ + bias}. Mirrors {@code torch.nn.Linear}: parameters
 * "weight" [out, in] and "bias" [out], initialised as PyTorch does (weight
 * {@code kaiming_uniform_(a=√5)}, i.e. uniform ±1/√in; bias uniform ±1/√in).
 */
public class Linear extends Module {
    private final int inFeatures;
    private final int outFeatures;

    /** A layer with bias, initialised from {@link Generator#defaultGenerator()}. */
    public Linear(int inFeatures, int outFeatures) {
        this(inFeatures, outFeatures, true, Generator.defaultGenerator());
    }

    /** A layer with or without bias, initialised from {@link Generator#defaultGenerator()}. */
    public Linear(int inFeatures, int outFeatures, boolean bias) {
        this(inFeatures, outFeatures, bias, Generator.defaultGenerator());
    }

    /**
     * A layer initialised from {@code generator} (weight first, then bias, as PyTorch's
     * {@code reset_parameters}).
     *
     * @param inFeatures size of each input sample (the weight's second dimension)
     * @param outFeatures size of each output sample (the weight's first dimension)
     * @param bias whether to add a learnable bias
     * @param generator the random source for initialisation (same seed, same parameters)
     * @throws IllegalArgumentException if a size is negative
     */
    public Linear(int inFeatures, int outFeatures, boolean bias, Generator generator) {
        if (inFeatures < 0 || outFeatures < 0) {
            throw new IllegalArgumentException("Linear: sizes must be non-negative, got in_features=" + inFeatures
                    + ", out_features=" + outFeatures);
        }
        this.inFeatures = inFeatures;
        this.outFeatures = outFeatures;
        Tensor w = Tensor.zeros(outFeatures, inFeatures).keep();
        if (inFeatures > 0 && outFeatures > 0) {
            Init.kaimingUniform(w, Math.sqrt(5), generator);
        }
        registerParameter("weight", w);
        if (bias) {
            Tensor b = Tensor.zeros(outFeatures).keep();
            if (inFeatures > 0) {
                float bound = (float) (1 / Math.sqrt(inFeatures));
                Init.uniform(b, -bound, bound, generator);
            }
            registerParameter("bias", b);
        }
    }

    /**
     * Applies the layer.
     *
     * @param input float32 [*, in_features] (usually [N, in_features])
     * @return float32 [*, out_features]
     * @throws IllegalArgumentException if the last size of input is not in_features (the message
     *     names both shapes)
     */
    @Override
    public Tensor forward(Tensor input) {
        return LinearFunction.apply(input, weight(), bias());
    }

    /**
     * The weight parameter [out_features, in_features] (the tied one after
     * {@code setParameter("weight", ...)}). Mirrors {@code Linear.weight}.
     */
    public Tensor weight() {
        return parameter("weight");
    }

    /** The bias parameter [out_features], or null when built without bias. Mirrors {@code Linear.bias}. */
    public Tensor bias() {
        return parameter("bias");
    }

    /** Mirrors {@code Linear.in_features}. */
    public int inFeatures() {
        return inFeatures;
    }

    /** Mirrors {@code Linear.out_features}. */
    public int outFeatures() {
        return outFeatures;
    }

    /** PyTorch's extra_repr, e.g. "in_features=2, out_features=2, bias=True". */
    @Override
    protected String extraRepr() {
        return "in_features=" + inFeatures + ", out_features=" + outFeatures + ", bias=" + (bias() != null ? "True" : "False");
    }
}
