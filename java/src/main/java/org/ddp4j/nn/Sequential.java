package org.ddp4j.nn;

import org.ddp4j.tensor.Tensor;

/** Runs child modules in order, naming them 0, 1, 2, ... Mirrors {@code torch.nn.Sequential}. */
public class Sequential extends Module {
    private final Module[] layers;

    public Sequential(Module... layers) {
        this.layers = layers.clone();
        for (int i = 0; i < layers.length; i++) {
            registerModule(Integer.toString(i), layers[i]);
        }
    }

    /**
     * Runs the children in order. A {@link BatchNorm2d} directly followed by a {@link ReLU} (those
     * classes exactly, not subclasses) runs as {@link BatchNorm2d#forwardRelu}: one fused pass with
     * the same values and one activation less.
     */
    @Override
    public Tensor forward(Tensor input) {
        Tensor x = input;
        for (int i = 0; i < layers.length; i++) {
            if (layers[i].getClass() == BatchNorm2d.class && i + 1 < layers.length
                    && layers[i + 1].getClass() == ReLU.class) {
                x = ((BatchNorm2d) layers[i]).forwardRelu(x, null);
                i++;
            } else {
                x = layers[i].forward(x);
            }
        }
        return x;
    }
}
