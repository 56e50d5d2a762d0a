package org.ddp4j.nn;

import org.ddp4j.nn.functional.CrossEntropyFunction;
import org.ddp4j.tensor.Tensor;

/**
 * Softmax cross entropy over class indices, averaged over the batch. Mirrors
 * {@code torch.nn.CrossEntropyLoss(ignore_index=...)} (reduction 'mean'; no class weights or label
 * smoothing).
 */
public class CrossEntropyLoss implements Loss {
    /** Null: no ignore_index (every target must lie in [0, C)). */
    private final Long ignoreIndex;

    /** Creates the criterion without ignore_index. */
    public CrossEntropyLoss() {
        this.ignoreIndex = null;
    }

    /**
     * Creates the criterion that leaves out targets equal to ignoreIndex (PyTorch's default -100),
     * computed by the large-vocabulary form {@link CrossEntropyFunction#apply(Tensor, Tensor, long)}
     * (CPU tensors).
     */
    public CrossEntropyLoss(long ignoreIndex) {
        this.ignoreIndex = ignoreIndex;
    }

    /**
     * @param input float32 logits [N, C]
     * @param target int64 class indices [N], each in [0, C) or equal to ignore_index
     * @return float32 scalar (shape []); NaN when every target is ignored
     * @throws IllegalArgumentException on wrong shapes or dtypes, or a target outside [0, C)
     */
    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return ignoreIndex == null ? CrossEntropyFunction.apply(input, target)
                : CrossEntropyFunction.apply(input, target, ignoreIndex);
    }

    /** "CrossEntropyLoss()", as PyTorch prints it whatever ignore_index is. */
    @Override
    public String toString() {
        return "CrossEntropyLoss()";  // PyTorch prints no arguments either
    }
}
