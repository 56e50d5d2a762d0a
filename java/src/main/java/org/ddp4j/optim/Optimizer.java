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

    /**
     * The optimizer's state and hyper-parameters, with the live state tensors (not copies).
     * Mirrors {@code optimizer.state_dict()}; save it with {@link OptimizerStateDict#save}.
     */
    OptimizerStateDict stateDict();

    /**
     * Replaces the optimizer's state and hyper-parameters with copies of {@code stateDict}'s
     * (tensors on any device; they are copied to each parameter's device). Mirrors
     * {@code optimizer.load_state_dict(state_dict)}.
     *
     * @throws IllegalArgumentException naming the problem when stateDict is of another optimizer,
     *     has another number of parameters, or a state tensor of the wrong shape; nothing changes then
     */
    void loadStateDict(OptimizerStateDict stateDict);

    /** Frees the optimizer's state tensors. */
    @Override
    void close();
}
