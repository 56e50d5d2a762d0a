package org.ddp4j.nn;

import org.ddp4j.tensor.Tensor;

/**
 * Softmax over one dimension as a layer: exp(x) / sum(exp(x)) along {@code dim}, each slice summing
 * to 1. Mirrors {@code torch.nn.Softmax(dim)}.
 */
public class Softmax extends Module {
    private final int dim;

    /** @param dim the dimension the softmax runs along; negative counts from the end */
    public Softmax(int dim) {
        this.dim = dim;
    }

    /**
     * @param input float32 of any shape with {@code dim} in range
     * @return float32 of input's shape
     * @throws IllegalArgumentException when dim is out of range for input (the message names both)
     */
    @Override
    public Tensor forward(Tensor input) {
        return input.softmax(dim);
    }

    /** Mirrors {@code Softmax.dim}. */
    public int dim() {
        return dim;
    }

    /** PyTorch's extra_repr: "dim=1". */
    @Override
    protected String extraRepr() {
        return "dim=" + dim;
    }
}
