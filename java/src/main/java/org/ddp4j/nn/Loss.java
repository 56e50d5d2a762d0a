package org.ddp4j.nn;

import org.ddp4j.tensor.Tensor;

/**
 * A loss criterion: maps a prediction and a target to a scalar to call {@code backward()} on.
 * PyTorch's losses are modules whose {@code forward} takes two tensors; {@link Module#forward}
 * takes one, so ddp4j's losses implement this interface instead (they have no parameters).
 */
public interface Loss {
    /**
     * Computes the loss, a float32 scalar (shape []) that records the autograd graph.
     *
     * @throws IllegalArgumentException if input and target do not fit together (names both shapes)
     */
    Tensor forward(Tensor input, Tensor target);
}
