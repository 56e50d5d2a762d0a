package org.ddp4j.vision.models;

import org.ddp4j.nn.Module;
import org.ddp4j.tensor.Tensor;

/** Stand-in for org.ddp4j.nn.Identity until the layers branch lands: returns its input. */
final class Identity extends Module {
    @Override
    public Tensor forward(Tensor input) {
        return input;
    }
}
