package org.ddp4j.nn;

import org.ddp4j.nn.functional.ReluFunction;
import org.ddp4j.tensor.Tensor;

/** The rectifier {@code max(x, 0)} as a layer (no parameters). Mirrors {@code torch.nn.ReLU}. */
public class ReLU extends Module {
    /** Creates the layer. */
    public ReLU() {}

    /**
     * Applies {@code max(x, 0)} elementwise.
     *
     * @param input float32 tensor of any shape
     * @return a new float32 tensor of the same shape
     */
    @Override
    public Tensor forward(Tensor input) {
        return ReluFunction.apply(input);
    }
}
