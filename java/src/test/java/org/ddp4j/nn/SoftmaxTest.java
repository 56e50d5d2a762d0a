package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/** nn.Softmax: the op along its dim (values from torch 1.13's softmax of this input), and how it prints. */
class SoftmaxTest {
    @Test
    void runsAlongItsDimAndPrintsAsPyTorch() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.of(new float[] {0, 1, 2, 3, 5, 7}, 2, 3);
            // torch.nn.Softmax(0)(torch.tensor([[0., 1, 2], [3, 5, 7]])) and Softmax(-1)
            float[] dim0 = {0.047425873f, 0.01798621f, 0.0066928509f, 0.95257413f, 0.98201379f, 0.99330715f};
            float[] dimLast = {0.09003057f, 0.24472847f, 0.66524096f, 0.01587624f, 0.11731043f, 0.86681333f};
            assertArrayEquals(dim0, new Softmax(0).forward(x).toFloatArray(), 1e-6f);
            assertArrayEquals(dimLast, new Softmax(-1).forward(x).toFloatArray(), 1e-6f);
            assertEquals("Softmax(dim=1)", new Softmax(1).toString());
        }
    }
}
