package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.ddp4j.nn.functional.Conv2dFunction;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Conv2d forward and gradients against PyTorch (scripts/golden/conv_golden.py). */
class Conv2dGoldenTest {
    // The sums here have at most 5*5*3 (forward) or N*P*Q = 128 (weight gradient) terms, so float32
    // results agree with PyTorch's to ~1e-6 relative; the atol covers values that nearly cancel.
    private static final double RTOL = 1e-5;
    private static final double ATOL = 1e-5;

    @ParameterizedTest
    @ValueSource(strings = {"conv2d_s1_p2", "conv2d_s2_p1"})
    void functionMatchesPyTorch(String name) {
        Golden g = Golden.load(name);
        int stride = (int) g.number("stride");
        int padding = (int) g.number("padding");
        try (var scope = Tensors.scope()) {
            Tensor x = g.tensor("x").requiresGrad(true);
            Tensor w = g.tensor("weight").requiresGrad(true);
            Tensor b = g.tensor("bias").requiresGrad(true);
            Tensor y = Conv2dFunction.apply(x, w, b, stride, padding);
            assertClose(g.tensor("y"), y, RTOL, ATOL, name + " y");
            y.backward(g.tensor("grad_y"));
            assertClose(g.tensor("grad_x"), x.grad(), RTOL, ATOL, name + " grad_x");
            assertClose(g.tensor("grad_weight"), w.grad(), RTOL, ATOL, name + " grad_weight");
            assertClose(g.tensor("grad_bias"), b.grad(), RTOL, ATOL, name + " grad_bias");
            for (Tensor t : new Tensor[] {x, w, b}) {
                t.grad().close();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"conv2d_s1_p2", "conv2d_s2_p1"})
    void withoutBias(String name) {
        Golden g = Golden.load(name);
        int stride = (int) g.number("stride");
        int padding = (int) g.number("padding");
        try (var scope = Tensors.scope()) {
            Tensor x = g.tensor("x").requiresGrad(true);
            Tensor w = g.tensor("weight").requiresGrad(true);
            Tensor y = Conv2dFunction.apply(x, w, null, stride, stride, padding, padding);
            assertClose(g.tensor("y_nobias"), y, RTOL, ATOL, name + " y without bias");
            y.backward(g.tensor("grad_y"));
            // The bias does not change the input and weight gradients.
            assertClose(g.tensor("grad_x"), x.grad(), RTOL, ATOL, name + " grad_x");
            assertClose(g.tensor("grad_weight"), w.grad(), RTOL, ATOL, name + " grad_weight");
            x.grad().close();
            w.grad().close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"conv2d_s1_p2", "conv2d_s2_p1"})
    void moduleMatchesPyTorch(String name) {
        Golden g = Golden.load(name);
        long[] ws = g.shape("weight");
        try (var scope = Tensors.scope();
                Conv2d conv = new Conv2d((int) ws[1], (int) ws[0], (int) ws[2], (int) g.number("stride"),
                        (int) g.number("padding"), true, new Generator(1))) {
            conv.weight().copyFrom(g.tensor("weight"));
            conv.bias().copyFrom(g.tensor("bias"));
            Tensor x = g.tensor("x");
            Tensor y = conv.forward(x);
            assertClose(g.tensor("y"), y, RTOL, ATOL, name + " module y");
            y.backward(g.tensor("grad_y"));
            assertNull(x.grad(), "input did not require grad");
            assertClose(g.tensor("grad_weight"), conv.weight().grad(), RTOL, ATOL, name + " module grad_weight");
            assertClose(g.tensor("grad_bias"), conv.bias().grad(), RTOL, ATOL, name + " module grad_bias");
            assertArrayEquals(g.shape("y"), y.shape());
        }
    }
}
