package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.PoolNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * MaxPool2d values, indices and gradients against PyTorch: the ConvNet's cases
 * (scripts/golden/conv_golden.py) and dilation, ceil mode and padding (scripts/golden/layers_golden.py).
 */
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
            PoolNatives.maxPool2dForward(TensorHandles.nativeHandle(x), kernel, kernel, stride, stride, padding, padding, 1, 1, false, r);
            TensorHandles.fromNativeResult(r, 0);
            Tensor indices = TensorHandles.fromNativeResult(r, 1);
            assertArrayEquals(g.longs("indices"), indices.toLongArray(), name + " indices");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"k3_s1_p1_d2", "k3_s2_ceil", "k3_s2_p1_d2_ceil", "k2_s2_p1_ceil_drop", "k2_s2_ceil_odd"})
    void optionsMatchPyTorch(String name) {
        Golden g = Golden.load("max_pool2d_options");
        int kernel = (int) g.number(name + ".kernel");
        int stride = (int) g.number(name + ".stride");
        int padding = (int) g.number(name + ".padding");
        int dilation = (int) g.number(name + ".dilation");
        boolean ceilMode = g.number(name + ".ceil_mode") != 0;
        try (var scope = Tensors.scope(); MaxPool2d pool = new MaxPool2d(kernel, stride, padding, dilation, ceilMode)) {
            Tensor x = g.tensor(name + ".x").requiresGrad(true);
            Tensor y = pool.forward(x);
            assertClose(g.tensor(name + ".y"), y, 0, 0, name + " y");
            y.backward(g.tensor(name + ".grad_y"));
            // Overlapping windows add gradients in the same order as PyTorch's CPU kernel.
            assertClose(g.tensor(name + ".grad_x"), x.grad(), 1e-6, 0, name + " grad_x");

            long[] r = NativeResults.buffer();
            PoolNatives.maxPool2dForward(TensorHandles.nativeHandle(x), kernel, kernel, stride, stride, padding, padding, dilation,
                    dilation, ceilMode, r);
            TensorHandles.fromNativeResult(r, 0);
            assertArrayEquals(g.longs(name + ".indices"), TensorHandles.fromNativeResult(r, 1).toLongArray(), name + " indices");
        }
    }

    @Test
    void reprAsPyTorch() {
        // print(nn.MaxPool2d(3, 2, 1, 2, ceil_mode=True)).
        assertEquals("MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)",
                new MaxPool2d(3, 2, 1, 2, true).toString());
    }
}
