package org.ddp4j.nn;

import org.ddp4j.nn.functional.CrossEntropyFunction;
import org.ddp4j.tensor.Tensor;

/**
 * Softmax cross entropy over class indices, averaged over the batch. Mirrors
 * {@code torch.nn.CrossEntropyLoss()} (reduction 'mean'; no class weights, ignore_index or
 * label smoothing).
 */
public class CrossEntropyLoss implements Loss {
    /** Creates the criterion. */
    public CrossEntropyLoss() {}

    /**
     * @param input float32 logits [N, C]
     * @param target int64 class indices [N], each in [0, C)
     * @return float32 scalar (shape [])
     * @throws IllegalArgumentException on wrong shapes or dtypes, or a target outside [0, C)
     */
    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return CrossEntropyFunction.apply(input, target);
    }

    /** "CrossEntropyLoss()". */
    @Override
    public String toString() {
        return "CrossEntropyLoss()";
    }
}
