package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.PoolNatives;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** MaxPool2d values, indices and gradients against PyTorch (scripts/golden/conv_golden.py). */
class MaxPool2dGoldenTest {
    @ParameterizedTest
    @ValueSource(strings = {"max_pool2d_k2", "max_pool2d_k3_s2_p1"})
    void matchesPyTorch(String name) {
        Golden g = Golden.load(name);
        int kernel = (int) g.number("kernel");
        int stride = (int) g.number("stride");
        int padding = (int) g.number("padding");
        try (var scope = Tensors.scope(); MaxPool2d pool = new MaxPool2d(kernel, stride, padding)) {
            Tensor x = g.tensor("x").requiresGrad(true);
            Tensor y = pool.forward(x);
            // Selecting a maximum involves no arithmetic: values and gradients must match exactly.
            assertClose(g.tensor("y"), y, 0, 0, name + " y");
            y.backward(g.tensor("grad_y"));
            assertClose(g.tensor("grad_x"), x.grad(), 0, 0, name + " grad_x");
            x.grad().close();

            long[] r = NativeResults.buffer();
            PoolNatives.maxPool2dForward(x.nativeHandle(), kernel, kernel, stride, stride, padding, padding, 1, 1, false, r);
            Tensor.fromNativeResult(r, 0);
            Tensor indices = Tensor.fromNativeResult(r, 1);
            assertArrayEquals(g.longs("indices"), indices.toLongArray(), name + " indices");
        }
    }
}
