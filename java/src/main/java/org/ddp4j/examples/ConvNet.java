package org.ddp4j.examples;

import org.ddp4j.nn.BatchNorm2d;
import org.ddp4j.nn.Conv2d;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MaxPool2d;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.ReLU;
import org.ddp4j.nn.Sequential;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * The two-conv network of the Fashion-MNIST demo, layer for layer the anchor's PyTorch ConvNet:
 * Conv 1→16 5x5 pad 2, BN, ReLU, MaxPool 2; Conv 16→32 5x5 pad 2, BN, ReLU, MaxPool 2;
 * Linear 1568→10. Input float32 [N, 1, 28, 28], output logits [N, 10]. Parameter names match
 * PyTorch's ({@code layer1.0.weight}, ..., {@code fc.bias}).
 */
public final class ConvNet extends Module {
    private final Sequential layer1;
    private final Sequential layer2;
    private final Linear fc;

    /** A ConvNet with PyTorch's default initialisation drawn from {@code generator}. */
    public ConvNet(int numClasses, Generator generator) {
        layer1 = registerModule("layer1", new Sequential(
                new Conv2d(1, 16, 5, 1, 2, true, generator), new BatchNorm2d(16), new ReLU(), new MaxPool2d(2)));
        layer2 = registerModule("layer2", new Sequential(
                new Conv2d(16, 32, 5, 1, 2, true, generator), new BatchNorm2d(32), new ReLU(), new MaxPool2d(2)));
        fc = registerModule("fc", new Linear(7 * 7 * 32, numClasses, true, generator));
    }

    @Override
    public Tensor forward(Tensor x) {
        Tensor out = layer2.forward(layer1.forward(x));
        return fc.forward(out.reshape(out.size(0), -1));
    }
}
