package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.nn.functional.Conv2dFunction;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Conv2d with the geometries of torchvision's ResNets, ResNeXts and MobileNets (1x1, strided,
 * the 7x7 stem, groups, depthwise, dilation) against PyTorch (scripts/golden/conv2d_geometry_golden.py).
 */
class Conv2dGeometryGoldenTest {
    // The references are float64 convolutions of the stored float32 inputs; ddp4j's float32 sums of
    // at most 3*7*7 (forward) or N*P*Q = 512 (weight gradient) products agree to ~1e-6.
    private static final double RTOL = 1e-5;
    private static final double ATOL = 1e-5;
    private static final Golden GOLDEN = Golden.load("conv2d_geometry");

    private static int number(String name, String key) {
        return (int) GOLDEN.number(name + "/" + key);
    }

    private static Tensor tensor(String name, String key) {
        return GOLDEN.tensor(name + "/" + key);
    }

    @ParameterizedTest
    @ValueSource(strings = {"pointwise_s1", "pointwise_s2", "k3_s2_p1", "stem_k7_s2_p3_nobias", "groups2", "depthwise",
        "dilation2", "groups2_dilation2_s2"})
    void functionMatchesPyTorch(String name) {
        int stride = number(name, "stride");
        int padding = number(name, "padding");
        int dilation = number(name, "dilation");
        int groups = number(name, "groups");
        boolean hasBias = GOLDEN.has(name + "/bias");
        try (var scope = Tensors.scope()) {
            Tensor x = tensor(name, "x").requiresGrad(true);
            Tensor w = tensor(name, "weight").requiresGrad(true);
            Tensor b = hasBias ? tensor(name, "bias").requiresGrad(true) : null;
            Tensor y = Conv2dFunction.apply(x, w, b, stride, stride, padding, padding, dilation, dilation, groups);
            assertClose(tensor(name, "y"), y, RTOL, ATOL, name + " y");
            y.backward(tensor(name, "grad_y"));
            assertClose(tensor(name, "grad_x"), x.grad(), RTOL, ATOL, name + " grad_x");
            assertClose(tensor(name, "grad_weight"), w.grad(), RTOL, ATOL, name + " grad_weight");
            if (hasBias) {
                assertClose(tensor(name, "grad_bias"), b.grad(), RTOL, ATOL, name + " grad_bias");
                b.grad().close();
            }
            x.grad().close();
            w.grad().close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"pointwise_s2", "stem_k7_s2_p3_nobias", "groups2", "depthwise", "groups2_dilation2_s2"})
    void moduleMatchesPyTorch(String name) {
        long[] xs = GOLDEN.shape(name + "/x");
        long[] ws = GOLDEN.shape(name + "/weight");
        boolean hasBias = GOLDEN.has(name + "/bias");
        Conv2d.Options options = Conv2d.Options.defaults().stride(number(name, "stride")).padding(number(name, "padding"))
                .dilation(number(name, "dilation")).groups(number(name, "groups")).bias(hasBias)
                .generator(new Generator(3));
        try (var scope = Tensors.scope();
                Conv2d conv = new Conv2d((int) xs[1], (int) ws[0], (int) ws[2], options)) {
            assertEquals(GOLDEN.text(name + "/repr"), conv.toString());
            assertArrayEquals(ws, conv.weight().shape(), "weight is [out, in / groups, k, k]");
            conv.weight().copyFrom(tensor(name, "weight"));
            if (hasBias) {
                conv.bias().copyFrom(tensor(name, "bias"));
            } else {
                assertNull(conv.bias());
            }
            Tensor y = conv.forward(tensor(name, "x"));
            assertClose(tensor(name, "y"), y, RTOL, ATOL, name + " module y");
            y.backward(tensor(name, "grad_y"));
            assertClose(tensor(name, "grad_weight"), conv.weight().grad(), RTOL, ATOL, name + " module grad_weight");
        }
    }

    @Test
    void groupsMustDivideBothChannelCounts() {
        var in = assertThrows(IllegalArgumentException.class,
                () -> new Conv2d(6, 8, 3, Conv2d.Options.defaults().groups(4)));
        assertTrue(in.getMessage().contains("in_channels must be divisible by groups"), in.getMessage());
        var out = assertThrows(IllegalArgumentException.class,
                () -> new Conv2d(8, 6, 3, Conv2d.Options.defaults().groups(4)));
        assertTrue(out.getMessage().contains("out_channels must be divisible by groups"), out.getMessage());
        var zero = assertThrows(IllegalArgumentException.class,
                () -> new Conv2d(8, 8, 3, Conv2d.Options.defaults().groups(0)));
        assertTrue(zero.getMessage().contains("groups must be a positive integer"), zero.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Conv2d(8, 8, 3, Conv2d.Options.defaults().dilation(0)));
    }

    @Test
    void functionNamesMismatchedGroupsAndTooSmallDilatedInputs() {
        try (var scope = Tensors.scope()) {
            // 6 input channels, weight [4, 2, 3, 3]: groups 3 would fit, groups 2 expects 4 channels.
            var e = assertThrows(IllegalArgumentException.class, () -> Conv2dFunction.apply(Tensor.zeros(1, 6, 5, 5),
                    Tensor.zeros(4, 2, 3, 3), null, 1, 1, 0, 0, 1, 1, 2));
            assertTrue(e.getMessage().contains("groups=2") && e.getMessage().contains("[1, 6, 5, 5]"), e.getMessage());
            // Dilation 3 spreads a 3x3 kernel over 7x7, more than the 5x5 input.
            var d = assertThrows(IllegalArgumentException.class, () -> Conv2dFunction.apply(Tensor.zeros(1, 1, 5, 5),
                    Tensor.zeros(1, 1, 3, 3), null, 1, 1, 0, 0, 3, 3, 1));
            assertTrue(d.getMessage().contains("7x7 window"), d.getMessage());
        }
    }
}
