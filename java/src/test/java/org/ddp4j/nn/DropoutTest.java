package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/**
 * Dropout: what defines it (its masks cannot match PyTorch's random stream): the kept fraction,
 * the 1/(1-p) scaling, the identity in eval, the backward through the forward's mask, p = 0 and
 * p = 1, seeding, and refused probabilities.
 */
class DropoutTest {
    private static final int N = 20_000;

    @Test
    void keepsAboutOneMinusPAndScalesTheKeptByItsInverse() {
        try (var scope = Tensors.scope()) {
            Dropout dropout = new Dropout(0.3, new Generator(7));
            float[] y = dropout.forward(Tensor.ones(N)).toFloatArray();
            float scale = 1f / 0.7f;
            int kept = 0;
            for (float v : y) {
                assertTrue(v == 0f || v == scale, "element " + v + " is neither 0 nor 1/(1-p)");
                kept += v == 0f ? 0 : 1;
            }
            // Binomial(20000, 0.7): standard deviation about 65, so 5 sigma is about 0.016 of N.
            assertEquals(0.7, (double) kept / N, 0.016, "kept fraction");
        }
    }

    @Test
    void backwardMultipliesByTheForwardsMask() {
        try (var scope = Tensors.scope()) {
            float[] values = new float[1000];
            for (int i = 0; i < values.length; i++) {
                values[i] = 0.5f + i % 7;
            }
            Tensor x = Tensor.of(values, 10, 100).requiresGrad(true);
            Tensor y = new Dropout(0.5, new Generator(3)).forward(x);
            float[] out = y.toFloatArray();
            y.sum().backward();
            float[] grad = x.grad().toFloatArray();
            int zeros = 0;
            for (int i = 0; i < values.length; i++) {
                // y = x * mask, so d(sum y)/dx = mask = y / x, element by element.
                assertEquals(out[i] / values[i], grad[i], 1e-6, "grad " + i);
                zeros += out[i] == 0 ? 1 : 0;
            }
            assertTrue(zeros > 0 && zeros < values.length, "mask zeroed " + zeros + " of 1000");
        }
    }

    @Test
    void evalModeAndZeroProbabilityAreTheIdentity() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.of(new float[] {1, -2, 3}, 3);
            Dropout dropout = new Dropout(0.9);
            dropout.eval();
            assertSame(x, dropout.forward(x));
            assertSame(x, new Dropout(0.0).forward(x));
            assertSame(x, Functional.dropout(x, 0.5, false, new Generator(0)));
        }
    }

    @Test
    void probabilityOneZeroesEverythingAndItsGradient() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.of(new float[] {1, -2, 3}, 3).requiresGrad(true);
            Tensor y = new Dropout(1.0).forward(x);
            y.sum().backward();
            for (int i = 0; i < 3; i++) {
                assertEquals(0f, y.toFloatArray()[i], 0f, "output " + i); // -0.0 for negative inputs, as PyTorch's x * 0
                assertEquals(0f, x.grad().toFloatArray()[i], 0f, "grad " + i);
            }
        }
    }

    @Test
    void theSameSeedDrawsTheSameMasks() {
        try (var scope = Tensors.scope()) {
            float[] a = new Dropout(0.5, new Generator(11)).forward(Tensor.ones(64)).toFloatArray();
            float[] b = new Dropout(0.5, new Generator(11)).forward(Tensor.ones(64)).toFloatArray();
            float[] c = new Dropout(0.5, new Generator(12)).forward(Tensor.ones(64)).toFloatArray();
            assertArrayEquals(a, b);
            assertTrue(!java.util.Arrays.equals(a, c), "another seed drew the same mask");
        }
    }

    @Test
    void aProbabilityOutsideZeroToOneIsRefused() {
        assertEquals("dropout probability has to be between 0 and 1, but got 1.5",
                assertThrows(IllegalArgumentException.class, () -> new Dropout(1.5)).getMessage());
        assertEquals("dropout probability has to be between 0 and 1, but got -0.1",
                assertThrows(IllegalArgumentException.class, () -> new Dropout(-0.1)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Dropout(Double.NaN));
        try (var scope = Tensors.scope()) {
            assertThrows(IllegalArgumentException.class,
                    () -> Functional.dropout(Tensor.ones(2), 2, true, new Generator(0)));
        }
    }
}
