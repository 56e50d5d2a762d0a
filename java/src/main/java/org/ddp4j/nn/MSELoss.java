package org.ddp4j.nn;

import org.ddp4j.nn.functional.MSELossFunction;
import org.ddp4j.tensor.Tensor;

/**
 * Mean squared error {@code mean((input - target)²)}. Mirrors {@code torch.nn.MSELoss()}
 * (reduction 'mean').
 */
public class MSELoss implements Loss {
    /** Creates the criterion. */
    public MSELoss() {}

    /**
     * @param input float32 prediction of any shape
     * @param target float32 tensor of the same shape
     * @return float32 scalar (shape [])
     * @throws IllegalArgumentException if the shapes differ (the message names both)
     */
    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return MSELossFunction.apply(input, target);
    }

    /** "MSELoss()". */
    @Override
    public String toString() {
        return "MSELoss()";
    }
}
