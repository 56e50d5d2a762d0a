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

    @Override
    public Tensor forward(Tensor input) {
        Tensor x = input;
        for (Module layer : layers) {
            x = layer.forward(x);
        }
        return x;
    }
}
