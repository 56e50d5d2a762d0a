package org.ddp4j.optim;

/**
 * Updates parameters from their gradients. Mirrors the core of {@code torch.optim.Optimizer}.
 * Closing an optimizer frees its state (e.g. momentum buffers), not the parameters.
 */
public interface Optimizer extends AutoCloseable {
    /** Performs one update of every parameter that has a gradient. Mirrors {@code step()}. */
    void step();

    /** Sets every parameter's gradient to zero (keeping the tensor). Mirrors {@code zero_grad(set_to_none=False)}. */
    void zeroGrad();

    /** Frees the optimizer's state tensors. */
    @Override
    void close();
}
