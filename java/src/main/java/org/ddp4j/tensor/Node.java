package org.ddp4j.tensor;

import java.util.concurrent.atomic.AtomicLong;

/**
 * One recorded op in the autograd graph: PyTorch's {@code grad_fn}. A differentiable op computes
 * its output, creates a Node subclass that saves what its backward needs, and calls
 * {@link #attach(Tensor)}; {@link Tensor#backward()} later calls {@link #backward(Tensor)}.
 */
public abstract class Node {
    private static final AtomicLong SEQUENCE = new AtomicLong();

    private final String name;
    private final Tensor[] inputs;
    /** Creation order: backward runs ready nodes newest first, as PyTorch's engine does. */
    final long sequenceNumber = SEQUENCE.incrementAndGet();

    /**
     * @param name the op's name for messages, e.g. "Conv2dBackward"
     * @param inputs the op's differentiable inputs, in the order {@link #backward} returns their gradients
     */
    protected Node(String name, Tensor... inputs) {
        this.name = name;
        this.inputs = inputs;
    }

    public String name() {
        return name;
    }

    /** The inputs given to the constructor (entries may be null for absent optional inputs). */
    public Tensor[] inputs() {
        return inputs.clone();
    }

    Tensor input(int i) {
        return inputs[i];
    }

    int inputCount() {
        return inputs.length;
    }

    /** Whether input i needs a gradient; backward may skip computing it (return null) when not. */
    protected final boolean needsInputGrad(int i) {
        return inputs[i] != null && inputs[i].requiresGrad();
    }

    /**
     * Gradients of the loss with respect to each input, given the gradient with respect to the
     * output (same shape as the output). Entries may be null (no gradient needed). Returned tensors
     * must be fresh or the given gradOutput; the engine frees nothing it did not create.
     */
    protected abstract Tensor[] backward(Tensor gradOutput);

    /**
     * Records this node as output's producer when grad mode is on and some input requires grad.
     * Returns output.
     */
    public final Tensor attach(Tensor output) {
        if (!Tensors.isGradEnabled()) {
            return output;
        }
        for (Tensor input : inputs) {
            if (input != null && input.requiresGrad()) {
                output.setGradFn(this);
                return output;
            }
        }
        return output;
    }
}
