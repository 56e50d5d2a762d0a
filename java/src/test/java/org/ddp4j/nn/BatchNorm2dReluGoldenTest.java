package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The fused {@link BatchNorm2d#forwardRelu} (what the ResNet blocks call) against PyTorch's
 * {@code F.relu(bn(x))} and {@code F.relu(bn(x) + residual)} (scripts/golden/batch_norm_relu_golden.py),
 * and bit for bit against ddp4j's unfused forward, add and relu: two training steps with their
 * gradients (input, residual, weight, bias) and running statistics, then an eval step; and
 * {@link Sequential}'s fusing of BatchNorm2d then ReLU.
 */
class BatchNorm2dReluGoldenTest {
    private static final double RTOL = 1e-5;
    private static final double ATOL = 1e-5;
    private static final Golden G = Golden.load("batch_norm2d_relu");

    @ParameterizedTest
    @ValueSource(strings = {"plain", "residual"})
    void matchesPyTorchAndTheUnfusedOps(String name) {
        int steps = (int) G.number("steps");
        try (var scope = Tensors.scope(); BatchNorm2d fused = new BatchNorm2d(4); BatchNorm2d unfused = new BatchNorm2d(4)) {
            for (BatchNorm2d bn : new BatchNorm2d[] {fused, unfused}) {
                bn.weight().copyFrom(G.tensor(name + ".weight"));
                bn.bias().copyFrom(G.tensor(name + ".bias"));
            }
            for (int step = 0; step <= steps; step++) {
                String key = name + "." + step;
                boolean residual = G.has(key + ".residual");
                if (step == steps) {
                    fused.eval();
                    unfused.eval();
                    try (var noGrad = Tensors.noGrad()) {
                        Tensor x = G.tensor(key + ".x");
                        Tensor r = residual ? G.tensor(key + ".residual") : null;
                        Tensor y = fused.forwardRelu(x, r);
                        assertClose(G.tensor(key + ".y"), y, RTOL, ATOL, key + " eval y");
                        assertArrayEquals(unfused(unfused, x, r).toFloatArray(), y.toFloatArray(), key + " eval y vs unfused");
                    }
                    continue;
                }
                Tensor x = G.tensor(key + ".x").requiresGrad(true);
                Tensor xu = G.tensor(key + ".x").requiresGrad(true);
                Tensor r = residual ? G.tensor(key + ".residual").requiresGrad(true) : null;
                Tensor ru = residual ? G.tensor(key + ".residual").requiresGrad(true) : null;
                for (BatchNorm2d bn : new BatchNorm2d[] {fused, unfused}) {
                    bn.weight().setGrad(null);
                    bn.bias().setGrad(null);
                }
                Tensor y = fused.forwardRelu(x, r);
                Tensor yu = unfused(unfused, xu, ru);
                assertClose(G.tensor(key + ".y"), y, RTOL, ATOL, key + " y");
                assertArrayEquals(yu.toFloatArray(), y.toFloatArray(), key + " y vs unfused");
                y.backward(G.tensor(key + ".grad_y"));
                yu.backward(G.tensor(key + ".grad_y"));
                assertClose(G.tensor(key + ".grad_x"), x.grad(), RTOL, ATOL, key + " grad_x");
                assertArrayEquals(xu.grad().toFloatArray(), x.grad().toFloatArray(), key + " grad_x vs unfused");
                if (residual) {
                    assertClose(G.tensor(key + ".grad_residual"), r.grad(), RTOL, ATOL, key + " grad_residual");
                    assertArrayEquals(ru.grad().toFloatArray(), r.grad().toFloatArray(), key + " grad_residual vs unfused");
                }
                assertClose(G.tensor(key + ".grad_weight"), fused.weight().grad(), RTOL, ATOL, key + " grad_weight");
                assertClose(G.tensor(key + ".grad_bias"), fused.bias().grad(), RTOL, ATOL, key + " grad_bias");
                assertArrayEquals(unfused.weight().grad().toFloatArray(), fused.weight().grad().toFloatArray(), key);
                assertArrayEquals(unfused.bias().grad().toFloatArray(), fused.bias().grad().toFloatArray(), key);
                assertClose(G.tensor(key + ".running_mean"), fused.runningMean(), RTOL, ATOL, key + " running_mean");
                assertClose(G.tensor(key + ".running_var"), fused.runningVar(), RTOL, ATOL, key + " running_var");
                assertArrayEquals(unfused.runningVar().toFloatArray(), fused.runningVar().toFloatArray(), key);
            }
        }
    }

    /** Eval mode with a gradient to record takes the unfused ops: still PyTorch's gradients. */
    @Test
    void evalModeWithGradientsMatchesTheUnfusedOps() {
        try (var scope = Tensors.scope(); BatchNorm2d fused = new BatchNorm2d(4); BatchNorm2d unfused = new BatchNorm2d(4)) {
            fused.eval();
            unfused.eval();
            Tensor x = G.tensor("residual.0.x").requiresGrad(true);
            Tensor xu = G.tensor("residual.0.x").requiresGrad(true);
            Tensor r = G.tensor("residual.0.residual");
            Tensor y = fused.forwardRelu(x, r);
            Tensor yu = unfused(unfused, xu, r);
            assertArrayEquals(yu.toFloatArray(), y.toFloatArray());
            y.backward(G.tensor("residual.0.grad_y"));
            yu.backward(G.tensor("residual.0.grad_y"));
            assertArrayEquals(xu.grad().toFloatArray(), x.grad().toFloatArray());
            assertNull(r.grad());
        }
    }

    /** Sequential runs BatchNorm2d then ReLU fused (as ConvNet's layers): the unfused bits, forward and backward. */
    @Test
    void sequentialBatchNormThenReluMatchesTheUnfusedOps() {
        try (var scope = Tensors.scope(); BatchNorm2d bn = new BatchNorm2d(4); BatchNorm2d bnu = new BatchNorm2d(4);
                Sequential seq = new Sequential(bn, new ReLU())) {
            Tensor x = G.tensor("plain.0.x").requiresGrad(true);
            Tensor xu = G.tensor("plain.0.x").requiresGrad(true);
            Tensor y = seq.forward(x);
            Tensor yu = new ReLU().forward(bnu.forward(xu));
            assertArrayEquals(yu.toFloatArray(), y.toFloatArray());
            y.backward(G.tensor("plain.0.grad_y"));
            yu.backward(G.tensor("plain.0.grad_y"));
            assertArrayEquals(xu.grad().toFloatArray(), x.grad().toFloatArray());
            assertArrayEquals(bnu.weight().grad().toFloatArray(), bn.weight().grad().toFloatArray());
            assertArrayEquals(bnu.runningMean().toFloatArray(), bn.runningMean().toFloatArray());
        }
    }

    @Test
    void residualOfAnotherShapeIsRefused() {
        try (var scope = Tensors.scope(); BatchNorm2d bn = new BatchNorm2d(4)) {
            Tensor x = G.tensor("plain.0.x");
            Tensor r = Tensor.zeros(2, 4, 7, 8);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> bn.forwardRelu(x, r));
            assertTrue(e.getMessage().contains("[2, 4, 7, 8]"), e.getMessage());
        }
    }

    private static Tensor unfused(BatchNorm2d bn, Tensor x, Tensor residual) {
        Tensor y = bn.forward(x);
        return Functional.relu(residual == null ? y : y.add(residual));
    }
}
