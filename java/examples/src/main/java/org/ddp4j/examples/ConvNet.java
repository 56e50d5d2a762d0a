package org.ddp4j.examples;

import org.ddp4j.nn.BatchNorm2d;
import org.ddp4j.nn.Conv2d;
import org.ddp4j.nn.Dropout;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MaxPool2d;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.ReLU;
import org.ddp4j.nn.functional.DropoutFunction;
import org.ddp4j.nn.Sequential;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * The two-conv network of the Fashion-MNIST demo, layer for layer the anchor's PyTorch ConvNet:
 * Conv 1→16 5x5 pad 2, BN, ReLU, MaxPool 2; Conv 16→32 5x5 pad 2, BN, ReLU, MaxPool 2;
 * Linear 1568→10, optionally with Dropout before the Linear (module {@code dropout}, which has
 * no parameters). Input float32 [N, 1, 28, 28], output logits [N, 10]. Parameter names match
 * PyTorch's ({@code layer1.0.weight}, ..., {@code fc.bias}).
 */
public final class ConvNet extends Module {
    private final Sequential layer1;
    private final Sequential layer2;
    private final Dropout dropout;
    private final Linear fc;

    /** A ConvNet with PyTorch's default initialisation drawn from {@code generator}. */
    public ConvNet(int numClasses, Generator generator) {
        this(numClasses, 0, generator);
    }

    /**
     * A ConvNet with Dropout(dropoutProbability) before the final Linear when it is > 0 (none at 0, so the
     * module tree is the plain one); parameters and masks drawn from {@code generator}.
     *
     * @throws IllegalArgumentException if dropoutProbability is outside [0, 1]
     */
    public ConvNet(int numClasses, double dropoutProbability, Generator generator) {
        DropoutFunction.checkProbability(dropoutProbability);
        layer1 = registerModule("layer1", new Sequential(
                new Conv2d(1, 16, 5, 1, 2, true, generator), new BatchNorm2d(16), new ReLU(), new MaxPool2d(2)));
        layer2 = registerModule("layer2", new Sequential(
                new Conv2d(16, 32, 5, 1, 2, true, generator), new BatchNorm2d(32), new ReLU(), new MaxPool2d(2)));
        dropout = dropoutProbability > 0 ? registerModule("dropout", new Dropout(dropoutProbability, generator)) : null;
        fc = registerModule("fc", new Linear(7 * 7 * 32, numClasses, true, generator));
    }

    @Override
    public Tensor forward(Tensor x) {
        Tensor out = layer2.forward(layer1.forward(x));
        Tensor flat = out.reshape(out.size(0), -1);
        return fc.forward(dropout != null ? dropout.forward(flat) : flat);
    }
}
