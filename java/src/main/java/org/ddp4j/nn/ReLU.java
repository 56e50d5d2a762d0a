package org.ddp4j.nn;

import org.ddp4j.nn.functional.ReluFunction;
import org.ddp4j.tensor.Tensor;

/** The rectifier {@code max(x, 0)} as a layer (no parameters). Mirrors {@code torch.nn.ReLU}. */
public class ReLU extends Module {
    private final boolean inplace;

    /** Creates the layer. */
    public ReLU() {
        this(false);
    }

    /**
     * Mirrors {@code torch.nn.ReLU(inplace)}. ddp4j's autograd keeps every op's output, so the
     * result is a new tensor either way (the same values); the flag is PyTorch's, kept so that a
     * model prints as PyTorch's ({@code ReLU(inplace=True)}, as torchvision's ResNets build it).
     */
    public ReLU(boolean inplace) {
        this.inplace = inplace;
    }

    /** PyTorch's {@code inplace} flag (see {@link #ReLU(boolean)}). */
    public boolean inplace() {
        return inplace;
    }

    /** PyTorch's extra_repr: {@code inplace=True}, or nothing. */
    @Override
    protected String extraRepr() {
        return inplace ? "inplace=True" : "";
    }

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
