package org.ddp4j.nn;

import org.ddp4j.nn.functional.GeluFunction;
import org.ddp4j.tensor.Tensor;

/** The Gaussian error linear unit. Mirrors {@code torch.nn.GELU(approximate)}. */
public class GELU extends Module {
    private final String approximate;

    /** The exact form, {@code approximate='none'}. */
    public GELU() {
        this("none");
    }

    /**
     * @param approximate "none" (exact, erf) or "tanh" (GPT-2's approximation)
     * @throws IllegalArgumentException for another string
     */
    public GELU(String approximate) {
        GeluFunction.isTanh(approximate);
        this.approximate = approximate;
    }

    /** Applies GELU elementwise to a float32 tensor of any shape; see {@link GeluFunction#apply}. */
    @Override
    public Tensor forward(Tensor input) {
        return GeluFunction.apply(input, approximate);
    }

    /** Mirrors {@code GELU.approximate}. */
    public String approximate() {
        return approximate;
    }

    /** PyTorch's extra_repr: "approximate='none'". */
    @Override
    protected String extraRepr() {
        return "approximate='" + approximate + "'";
    }
}
