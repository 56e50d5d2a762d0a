package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;

/**
 * Residual additions with plain {@link Tensor#add}: a tensor that feeds both a branch and the sum
 * (a leaf in the stem, non-leaves in the blocks) gets the sum of both paths' gradients. A tiny
 * ResNet (identity and 1x1-conv shortcuts, AdaptiveAvgPool2d head) against PyTorch
 * (scripts/golden/layers_golden.py): the loss and every gradient.
 */
class ResidualBlockGoldenTest {
    private static final double RTOL = 1e-5;
    private static final double ATOL = 1e-5;

    /** The Python TinyResNet, with the same parameter names. */
    static final class TinyResNet extends Module {
        final Conv2d conv0 = registerModule("conv0", new Conv2d(3, 3, 3, 1, 1, false));
        final Conv2d conv1 = registerModule("conv1", new Conv2d(3, 3, 3, 1, 1, false));
        final BatchNorm2d bn1 = registerModule("bn1", new BatchNorm2d(3));
        final Conv2d conv2 = registerModule("conv2", new Conv2d(3, 3, 3, 1, 1, false));
        final BatchNorm2d bn2 = registerModule("bn2", new BatchNorm2d(3));
        final Conv2d conv3 = registerModule("conv3", new Conv2d(3, 4, 3, 2, 1, false));
        final BatchNorm2d bn3 = registerModule("bn3", new BatchNorm2d(4));
        final Conv2d conv4 = registerModule("conv4", new Conv2d(4, 4, 3, 1, 1, false));
        final BatchNorm2d bn4 = registerModule("bn4", new BatchNorm2d(4));
        final Conv2d down = registerModule("down", new Conv2d(3, 4, 1, 2, 0, false));
        final BatchNorm2d downBn = registerModule("down_bn", new BatchNorm2d(4));
        final AdaptiveAvgPool2d pool = registerModule("pool", new AdaptiveAvgPool2d(1));
        final Flatten flatten = registerModule("flatten", new Flatten());
        final Linear fc = registerModule("fc", new Linear(4, 3));

        @Override
        public Tensor forward(Tensor x) {
            Tensor h = Functional.relu(conv0.forward(x)).add(x);
            Tensor out = Functional.relu(bn1.forward(conv1.forward(h)));
            h = Functional.relu(bn2.forward(conv2.forward(out)).add(h));
            out = Functional.relu(bn3.forward(conv3.forward(h)));
            h = Functional.relu(bn4.forward(conv4.forward(out)).add(downBn.forward(down.forward(h))));
            return fc.forward(flatten.forward(pool.forward(h)));
        }
    }

    @Test
    void gradientsMatchPyTorch() {
        Golden g = Golden.load("residual_block");
        try (var scope = Tensors.scope(); TinyResNet model = new TinyResNet()) {
            Map<String, Tensor> params = model.namedParameters();
            @SuppressWarnings("unchecked")
            List<String> names = (List<String>) g.json("names");
            assertEquals(names, new ArrayList<>(params.keySet()));
            for (String name : names) {
                params.get(name).copyFrom(g.tensor(name));
            }
            Tensor x = g.tensor("x").requiresGrad(true);
            Tensor loss = Functional.crossEntropy(model.forward(x), g.tensor("target"));
            assertClose(g.tensor("loss"), loss, RTOL, ATOL, "loss");
            loss.backward();
            assertClose(g.tensor("grad_x"), x.grad(), RTOL, ATOL, "grad_x");
            for (String name : names) {
                assertClose(g.tensor(name + ".grad"), params.get(name).grad(), RTOL, ATOL, name + ".grad");
            }
        }
    }
}
