package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.amp.Autocast;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The head fused with its loss gives the loss and gradients of linear + cross entropy: N across
 * several 128-row blocks, ignored targets, a grad_output other than 1, in float32 and under bf16
 * autocast (the same roundings of the operands; the sums differ only in order, far below the
 * tolerances).
 */
class LinearCrossEntropyTest {
    private static final long IGNORE = -100;

    @ParameterizedTest(name = "N {0}, C {1}, V {2}, bf16 {3}")
    @CsvSource({"300, 16, 97, false", "5, 8, 3, false", "130, 12, 257, true"})
    void fusedEqualsLinearThenCrossEntropy(int n, int c, int v, boolean bf16) {
        Generator g = new Generator(n + v);
        float[] h = g.normal(n * c);
        float[] w = g.normal(v * c);
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            t[i] = i % 7 == 3 ? IGNORE : (i * 31L) % v;
        }
        float[][] fused = run(h, w, t, n, c, v, bf16, true);
        float[][] unfused = run(h, w, t, n, c, v, bf16, false);
        double tol = bf16 ? 2e-4 : 2e-6;
        String[] names = {"loss", "h.grad", "w.grad"};
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < fused[k].length; i++) {
                assertEquals(unfused[k][i], fused[k][i], tol * Math.max(1, Math.abs(unfused[k][i])), names[k] + "[" + i + "]");
            }
        }
        assertTrue(Math.abs(fused[2][0]) > 0, "w's gradient is not trivially 0");
    }

    /** {loss, h.grad, w.grad} of 0.5 · loss. */
    private static float[][] run(float[] hv, float[] wv, long[] t, int n, int c, int v, boolean bf16, boolean fused) {
        try (var scope = Tensors.scope(); var ac = bf16 ? Autocast.enable(Device.CPU, DType.BFLOAT16) : null) {
            Tensor h = Tensor.of(hv, n, c).requiresGrad(true);
            Tensor w = Tensor.of(wv, v, c).requiresGrad(true);
            Tensor target = Tensor.ofLongs(t, n);
            Tensor loss = fused ? Functional.linearCrossEntropy(h, w, target, IGNORE)
                    : Functional.crossEntropy(Functional.linear(h, w), target, IGNORE);
            loss.mul(0.5f).backward();
            return new float[][] {{loss.item()}, h.grad().toFloatArray(), w.grad().toFloatArray()};
        }
    }

    @Test
    void everyTargetIgnoredGivesNaNAndZeroGradients() {
        try (var scope = Tensors.scope()) {
            Tensor h = Tensor.ones(3, 4).requiresGrad(true);
            Tensor w = Tensor.ones(5, 4).requiresGrad(true);
            Tensor loss = Functional.linearCrossEntropy(h, w, Tensor.ofLongs(new long[] {IGNORE, IGNORE, IGNORE}, 3), IGNORE);
            assertTrue(Float.isNaN(loss.item()));
            loss.backward();
            for (float x : w.grad().toFloatArray()) {
                assertEquals(0f, x);
            }
        }
    }

    @Test
    void withoutGradNoNodeIsRecorded() {
        try (var scope = Tensors.scope(); var ng = Tensors.noGrad()) {
            Tensor h = Tensor.ones(3, 4).requiresGrad(true);
            Tensor w = Tensor.ones(5, 4).requiresGrad(true);
            Tensor loss = Functional.linearCrossEntropy(h, w, Tensor.ofLongs(new long[] {0, 1, 2}, 3), IGNORE);
            assertEquals((float) Math.log(5), loss.item(), 1e-6f); // equal logits: log V
            assertNull(loss.gradFn());
        }
    }

    @Test
    void badInputIsNamed() {
        try (var scope = Tensors.scope()) {
            var shape = assertThrows(IllegalArgumentException.class, () -> Functional.linearCrossEntropy(Tensor.zeros(3, 4),
                    Tensor.zeros(5, 6), Tensor.ofLongs(new long[] {0, 1, 2}, 3), IGNORE));
            assertTrue(shape.getMessage().contains("input [3, 4] and weight [5, 6] must be [N, C] and [V, C]"), shape.getMessage());
            var target = assertThrows(IllegalArgumentException.class, () -> Functional.linearCrossEntropy(Tensor.zeros(3, 4),
                    Tensor.zeros(5, 4), Tensor.ofLongs(new long[] {0, 5, 2}, 3), IGNORE));
            assertTrue(target.getMessage().contains("target 5 at index 1 is out of range for 5 classes"), target.getMessage());
        }
    }
}
