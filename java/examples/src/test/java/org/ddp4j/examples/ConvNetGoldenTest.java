package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.Map;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;

/**
 * The whole two-conv network against PyTorch (scripts/golden/convnet_golden.py): from PyTorch's
 * initial weights, three SGD momentum steps on a fixed batch give PyTorch's losses, parameters
 * and BatchNorm buffers. Each layer has its own golden test; this one checks that they compose
 * into PyTorch's training step (names, layouts, the order of updates).
 */
class ConvNetGoldenTest {

    @Test
    void threeTrainingStepsMatchPyTorch() {
        Golden g = Golden.load("convnet_steps");
        try (ConvNet model = new ConvNet(10, new Generator(0))) {
            Map<String, Tensor> initial = new LinkedHashMap<>();
            try (var scope = Tensors.scope()) {
                for (String name : model.stateDict().keySet()) {
                    initial.put(name, g.tensor("init." + name));
                }
                model.loadStateDict(initial);
            }
            CrossEntropyLoss ce = new CrossEntropyLoss();
            try (SGD opt = new SGD(model.parameters(), 0.01, 0.9, 0, 0, false);
                    var scope = Tensors.scope()) {
                Tensor images = g.tensor("images");
                Tensor labels = g.tensor("labels");
                for (int step = 0; step < 3; step++) {
                    Tensor loss = ce.forward(model.forward(images), labels);
                    assertEquals(g.number("loss" + step), loss.item(), 1e-5 * Math.abs(g.number("loss" + step)), "loss " + step);
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                }
            }
            try (var scope = Tensors.scope()) {
                model.stateDict().forEach((name, t) -> {
                    if (name.endsWith("num_batches_tracked")) {
                        assertEquals(g.longs("final." + name)[0], t.toLongArray()[0], name);
                    } else {
                        Assertions2.assertClose(g.tensor("final." + name), t, 1e-5, 1e-6, name);
                    }
                });
            }
        }
    }
}
