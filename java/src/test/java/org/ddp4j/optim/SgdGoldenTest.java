package org.ddp4j.optim;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** torch.optim.SGD's variants, three steps each, against PyTorch (golden/sgd.json); validation. */
class SgdGoldenTest {
    @ParameterizedTest
    @ValueSource(strings = {"plain", "momentum", "dampening_wd", "nesterov"})
    void threeStepsMatchPyTorch(String variant) {
        Golden g = Golden.load("sgd");
        Tensor param = g.tensor("param").keep().requiresGrad(true);
        float[] grads = g.floats("grads");
        float[] after = g.floats(variant + ".params_after");
        int n = Math.toIntExact(param.numel());
        try (SGD opt = new SGD(List.of(param), g.number(variant + ".lr"), g.number(variant + ".momentum"),
                g.number(variant + ".dampening"), g.number(variant + ".weight_decay"),
                g.number(variant + ".nesterov") != 0)) {
            for (int step = 0; step < 3; step++) {
                // Each step runs in its own scope, as a training loop would: the momentum buffer must survive it.
                try (var scope = Tensors.scope()) {
                    param.setGrad(Tensor.ofRegion(grads, step * n, param.shape()));
                    opt.step();
                    float[] expected = java.util.Arrays.copyOfRange(after, step * n, (step + 1) * n);
                    assertClose(expected, param.toFloatArray(), 1e-5, 1e-6, variant + " step " + (step + 1));
                }
            }
            param.setGrad(null);
            if (opt.momentum() != 0) {
                assertNotNull(opt.momentumBuffer(param));
                assertTrue(!opt.momentumBuffer(param).isClosed());
            } else {
                assertNull(opt.momentumBuffer(param));
            }
        } finally {
            param.close();
        }
    }

    @Test
    void skipsParametersWithoutGradient() {
        try (var scope = Tensors.scope()) {
            Tensor a = Tensor.of(new float[] {1, 2}, 2).requiresGrad(true);
            Tensor b = Tensor.of(new float[] {3, 4}, 2).requiresGrad(true);
            a.setGrad(Tensor.of(new float[] {10, 10}, 2));
            try (SGD opt = new SGD(List.of(a, b), 0.1, 0.9, 0, 0, false)) {
                opt.step();
                assertArrayEquals(new float[] {0, 1}, a.toFloatArray(), 1e-6f);
                assertArrayEquals(new float[] {3, 4}, b.toFloatArray());
                assertNull(opt.momentumBuffer(b));
                opt.zeroGrad();
                assertArrayEquals(new float[] {0, 0}, a.grad().toFloatArray());
            }
        }
    }

    @Test
    void validatesLikePyTorch() {
        try (var scope = Tensors.scope()) {
            Tensor p = Tensor.zeros(2).requiresGrad(true);
            var lr = assertThrows(IllegalArgumentException.class, () -> new SGD(List.of(p), -0.1));
            assertTrue(lr.getMessage().contains("Invalid learning rate: -0.1"), lr.getMessage());
            var nesterov = assertThrows(IllegalArgumentException.class, () -> new SGD(List.of(p), 0.1, 0.9, 0.1, 0, true));
            assertTrue(nesterov.getMessage().toLowerCase().contains("nesterov momentum requires a momentum and zero dampening"),
                    nesterov.getMessage());
            assertThrows(IllegalArgumentException.class, () -> new SGD(List.of(p), 0.1, 0, 0, 0, true));
            assertThrows(IllegalArgumentException.class, () -> new SGD(List.of(p), 0.1, -1, 0, 0, false));
            assertThrows(IllegalArgumentException.class, () -> new SGD(List.of(p), 0.1, 0, 0, -1, false));
            assertThrows(IllegalArgumentException.class, () -> new SGD(List.of(), 0.1));
            Tensor nonLeaf = p.mul(2f);
            var leaf = assertThrows(IllegalArgumentException.class, () -> new SGD(List.of(nonLeaf), 0.1));
            assertTrue(leaf.getMessage().contains("non-leaf"), leaf.getMessage());
            SGD opt = new SGD(List.of(p), 0.1);
            assertThrows(IllegalArgumentException.class, () -> opt.setLr(-1));
            opt.setLr(0.5);
            assertEquals(0.5, opt.lr());
        }
    }
}
