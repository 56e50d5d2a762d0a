package org.ddp4j.nn;

import org.ddp4j.tensor.Tensor;

/**
 * Returns its input unchanged (the same tensor, so gradients flow straight through): PyTorch's
 * {@code torch.nn.Identity}. A placeholder where an architecture has an optional layer, e.g. a
 * ResNet block's shortcut when no downsampling is needed. No parameters.
 */
public class Identity extends Module {
    /** Creates the layer. */
    public Identity() {}

    /** Returns input itself. */
    @Override
    public Tensor forward(Tensor input) {
        return input;
    }
}
