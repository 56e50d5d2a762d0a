package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/** Identity passes its input through untouched, gradients included, as torch.nn.Identity. */
class IdentityTest {
    @Test
    void returnsTheInputAndPassesGradients() {
        try (var scope = Tensors.scope(); Identity id = new Identity()) {
            Tensor x = Tensor.of(new float[] {1, -2, 3, 4}, 2, 2).requiresGrad(true);
            Tensor y = id.forward(x);
            assertSame(x, y);
            // Through a real op so backward starts from a non-leaf: d(sum(3 * y))/dx = 3.
            y.mul(3f).sum().backward();
            assertArrayEquals(new float[] {3, 3, 3, 3}, x.grad().toFloatArray());
            assertEquals(0, id.parameters().size());
        }
    }

    @Test
    void reprAsPyTorch() {
        assertEquals("Identity()", new Identity().toString());
    }
}
