package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Attention on a packed [B, T, 3C] projection gives, bit for bit, what scaled_dot_product_attention
 * gives on the same projection split, viewed as heads and transposed (GPT-2's way before), forward
 * and backward, with and without dropout (the keep mask hashes the same batch·head index), at
 * lengths below, at and above the kernel's 64-row tiles.
 */
class AttentionPackedTest {
    @ParameterizedTest(name = "B {0}, T {1}, C {2}, heads {3}, causal {4}, dropout {5}")
    @CsvSource({"2, 7, 12, 3, true, 0.0", "1, 64, 16, 2, true, 0.0", "2, 130, 24, 4, true, 0.25", "1, 70, 8, 1, false, 0.0",
        "1, 1, 4, 2, true, 0.0"})
    void packedEqualsSplitViewTransposeBitForBit(int b, int t, int c, int heads, boolean causal, double dropout) {
        float[] x = new Generator(b * 1000 + t).normal(b * t * 3 * c);
        float[] g = new Generator(7).normal(b * t * c);
        float[][] packed = run(x, g, b, t, c, heads, causal, dropout, true);
        float[][] split = run(x, g, b, t, c, heads, causal, dropout, false);
        assertArrayEquals(split[0], packed[0], "output");
        assertArrayEquals(split[1], packed[1], "gradient of qkv");
        boolean moved = false;
        for (float v : packed[1]) {
            moved |= v != 0;
        }
        assertTrue(moved, "the gradient is not all zeros");
    }

    /** {out [B, T, C], d qkv} of attention over qkv with upstream gradient g. */
    private static float[][] run(float[] x, float[] g, int b, int t, int c, int heads, boolean causal, double dropout,
            boolean packed) {
        try (var scope = Tensors.scope()) {
            Tensor qkv = Tensor.of(x, b, t, 3L * c).requiresGrad(true);
            Generator gen = new Generator(11);
            Tensor out;
            if (packed) {
                out = Functional.multiHeadAttentionPacked(qkv, heads, dropout, causal, null, gen);
            } else {
                List<Tensor> parts = qkv.split(c, 2);
                Tensor[] h = new Tensor[3];
                for (int i = 0; i < 3; i++) {
                    h[i] = parts.get(i).view(b, t, heads, c / heads).transpose(1, 2);
                }
                out = Functional.scaledDotProductAttention(h[0], h[1], h[2], null, dropout, causal, null, gen)
                        .transpose(1, 2).contiguous().view(b, t, c);
            }
            out.backward(Tensor.of(g, b, t, c));
            return new float[][] {out.toFloatArray(), qkv.grad().toFloatArray()};
        }
    }

    @Test
    void badShapesAreNamed() {
        try (var scope = Tensors.scope()) {
            var e = assertThrows(IllegalArgumentException.class,
                    () -> Functional.multiHeadAttentionPacked(Tensor.zeros(2, 3, 10), 2, 0, true, null, null));
            assertTrue(e.getMessage().contains("qkv must be [B, T, 3 * C]"), e.getMessage());
            var h = assertThrows(IllegalArgumentException.class,
                    () -> Functional.multiHeadAttentionPacked(Tensor.zeros(2, 3, 12), 3, 0, true, null, null));
            assertTrue(h.getMessage().contains("the width C = 4 must split into 3 heads"), h.getMessage());
        }
    }
}
