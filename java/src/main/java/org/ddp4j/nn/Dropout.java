package org.ddp4j.nn;

import org.ddp4j.nn.functional.DropoutFunction;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * Dropout as a layer (no parameters): in training mode each element is zeroed with probability p
 * and the others are scaled by 1/(1-p); in eval mode it is the identity. Mirrors
 * {@code torch.nn.Dropout(p=0.5)}. Masks come from a ddp4j {@link Generator} (seed it for
 * reproducible runs; ranks with the same seed draw the same masks).
 * Example: {@code new Sequential(new Linear(784, 128), new ReLU(), new Dropout(0.2), new Linear(128, 10))}.
 */
public class Dropout extends Module {
    private final double p;
    private final Generator generator;

    /** p = 0.5, masks from {@link Generator#defaultGenerator()}. */
    public Dropout() {
        this(0.5);
    }

    /**
     * Masks from {@link Generator#defaultGenerator()}.
     *
     * @throws IllegalArgumentException "dropout probability has to be between 0 and 1, but got 1.5"
     */
    public Dropout(double p) {
        this(p, Generator.defaultGenerator());
    }

    /**
     * @param p probability of zeroing an element, in [0, 1]
     * @param generator source of the masks
     * @throws IllegalArgumentException "dropout probability has to be between 0 and 1, but got 1.5"
     */
    public Dropout(double p, Generator generator) {
        DropoutFunction.checkProbability(p);
        this.p = p;
        this.generator = generator;
    }

    /** The probability of zeroing an element. */
    public double p() {
        return p;
    }

    /**
     * A new float32 tensor of input's shape in training mode (a fresh mask each call), input itself
     * in eval mode or when p is 0.
     */
    @Override
    public Tensor forward(Tensor input) {
        return DropoutFunction.apply(input, p, isTraining(), generator);
    }

    /** E.g. "p=0.5, inplace=False", as PyTorch prints it. */
    @Override
    protected String extraRepr() {
        return "p=" + ReprFormat.pythonFloat(p) + ", inplace=False";
    }
}
