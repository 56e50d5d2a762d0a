package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/**
 * A query whose keys are all masked attends to nothing: its output row is 0 and it passes no
 * gradient (PyTorch's scaled_dot_product_attention since 2.5), while the other rows' values and
 * gradients stay finite (a NaN there would spread to every key's gradient).
 */
class AttentionMaskedRowTest {
    @Test
    void aFullyMaskedRowGivesZerosAndLeavesTheOthersFinite() {
        try (var scope = Tensors.scope()) {
            Generator g = new Generator(3);
            Tensor q = Tensor.of(g.normal(1 * 3 * 4), 1, 3, 4).requiresGrad(true);
            Tensor k = Tensor.of(g.normal(1 * 5 * 4), 1, 5, 4).requiresGrad(true);
            Tensor v = Tensor.of(g.normal(1 * 5 * 2), 1, 5, 2).requiresGrad(true);
            float inf = Float.NEGATIVE_INFINITY;
            Tensor mask = Tensor.of(new float[] {0, 0, inf, 0, 0, inf, inf, inf, inf, inf, 0, inf, 0, inf, 0}, 3, 5);
            Tensor out = Functional.scaledDotProductAttention(q, k, v, mask, 0, false, null, null);
            float[] o = out.toFloatArray();
            assertEquals(0f, o[2]);
            assertEquals(0f, o[3]);
            out.sum().backward();
            for (Tensor t : new Tensor[] {q, k, v}) {
                for (float x : t.grad().toFloatArray()) {
                    assertEquals(true, Float.isFinite(x), "a gradient is not finite");
                }
            }
            float[] gq = q.grad().toFloatArray();
            for (int c = 4; c < 8; c++) {
                assertEquals(0f, gq[c], "the masked query's gradient");
            }
            for (int i = 0; i < o.length; i++) {
                assertEquals(true, Float.isFinite(o[i]), "output " + i);
            }
        }
    }
}
