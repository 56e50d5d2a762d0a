package org.ddp4j.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/**
 * zero_grad(set_to_none=True) against zeroing, as PyTorch: the gradients become null (freed when
 * autograd allocated them), step() then leaves the parameters alone even with momentum, and the
 * next backward starts a fresh gradient.
 */
class ZeroGradSetToNoneTest {
    private static final Tensor X = Tensor.of(new float[] {0.5f, -1f, 2f, 1.5f, 0.25f, -0.75f}, 2, 3).keep();
    private static final Tensor Y = Tensor.of(new float[] {1f, 0f, -1f, 2f}, 2, 2).keep();

    private static void backward(Linear model) {
        try (var scope = Tensors.scope()) {
            new MSELoss().forward(model.forward(X), Y).backward();
        }
    }

    private static List<float[]> values(List<Tensor> tensors) {
        List<float[]> out = new ArrayList<>();
        tensors.forEach(t -> out.add(t.toFloatArray()));
        return out;
    }

    @Test
    void setToNoneDropsAndFreesGradientsAndStepSkipsThem() {
        try (Linear model = new Linear(3, 2, true, new Generator(1));
                SGD opt = new SGD(model.parameters(), 0.1, 0.9, 0, 0, false)) {
            backward(model);
            List<float[]> firstGrads = values(List.of(model.weight().grad(), model.bias().grad()));
            opt.step();
            Tensor oldWeightGrad = model.weight().grad();
            opt.zeroGrad(true);
            assertNull(model.weight().grad());
            assertNull(model.bias().grad());
            assertTrue(oldWeightGrad.isClosed(), "autograd's gradient is freed, not left to the Cleaner");

            // No gradient: SGD skips the parameters, momentum buffer and all (PyTorch's p.grad is None).
            List<float[]> before = values(model.parameters());
            opt.step();
            for (int i = 0; i < before.size(); i++) {
                assertArrayEquals(before.get(i), model.parameters().get(i).toFloatArray());
            }
            // Zeroed gradients instead: momentum still moves them.
            backward(model);
            opt.zeroGrad(false);
            assertNotNull(model.weight().grad());
            opt.step();
            assertFalse(Arrays.equals(before.get(0), model.weight().toFloatArray()));

            // After set_to_none the next backward's gradient is that step's alone, not a sum.
            model.zeroGrad(true);
            assertNull(model.weight().grad());
            try (Linear fresh = new Linear(3, 2, true, new Generator(1))) {
                fresh.weight().copyFrom(model.weight());
                fresh.bias().copyFrom(model.bias());
                backward(fresh);
                backward(model);
                assertArrayEquals(fresh.weight().grad().toFloatArray(), model.weight().grad().toFloatArray());
                assertArrayEquals(fresh.bias().grad().toFloatArray(), model.bias().grad().toFloatArray());
            }
            assertFalse(Arrays.equals(firstGrads.get(0), model.weight().grad().toFloatArray()));
        }
    }

    @Test
    void aGradientGivenWithSetGradStaysOpen() {
        try (Linear model = new Linear(3, 2); Tensor given = Tensor.zeros(2, 3).keep()) {
            model.weight().setGrad(given);
            model.zeroGrad(true);
            assertNull(model.weight().grad());
            assertFalse(given.isClosed(), "the caller of setGrad owns it (DDP's bucket views)");
            backward(model);
            Tensor allocated = model.weight().grad();
            assertNotNull(allocated);
            assertFalse(given == allocated);
            // The gradient that backward allocated is the module's own again: the next drop frees it.
            model.zeroGrad(true);
            assertTrue(allocated.isClosed());
        }
    }
}
