package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.nn.functional.AvgPool2dFunction;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** AvgPool2d values and gradients against PyTorch, every option (scripts/golden/layers_golden.py). */
class AvgPool2dGoldenTest {
    private static final Golden GOLDEN = Golden.load("avg_pool2d");

    @ParameterizedTest
    @ValueSource(strings = {"k3_s2_p1", "k3_s2_p1_ceil_nopad", "k2_s2_ceil_odd", "k3_s3_p1_ceil_drop",
        "k3_s1_p1_divisor4", "k4_s2_p2_ceil"})
    void matchesPyTorch(String name) {
        int divisor = (int) GOLDEN.number(name + ".divisor_override");
        try (var scope = Tensors.scope();
                AvgPool2d pool = new AvgPool2d((int) GOLDEN.number(name + ".kernel"), (int) GOLDEN.number(name + ".stride"),
                        (int) GOLDEN.number(name + ".padding"), GOLDEN.number(name + ".ceil_mode") != 0,
                        GOLDEN.number(name + ".count_include_pad") != 0, divisor == 0 ? null : divisor)) {
            Tensor x = GOLDEN.tensor(name + ".x").requiresGrad(true);
            Tensor y = pool.forward(x);
            assertClose(GOLDEN.tensor(name + ".y"), y, 1e-5, 1e-6, name + " y");
            y.backward(GOLDEN.tensor(name + ".grad_y"));
            assertClose(GOLDEN.tensor(name + ".grad_x"), x.grad(), 1e-5, 1e-6, name + " grad_x");
        }
    }

    @Test
    void reprAsPyTorch() {
        // print(nn.AvgPool2d(3)) and print(nn.AvgPool2d(3, 2, 1, True, False, 4)): the other options are not shown.
        assertEquals("AvgPool2d(kernel_size=3, stride=3, padding=0)", new AvgPool2d(3).toString());
        assertEquals("AvgPool2d(kernel_size=3, stride=2, padding=1)", new AvgPool2d(3, 2, 1, true, false, 4).toString());
    }

    @Test
    void badGeometryIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> new AvgPool2d(3, 2, 2));
        assertThrows(IllegalArgumentException.class, () -> new AvgPool2d(3, 2, 1, false, true, 0));
        try (var scope = Tensors.scope()) {
            var e = assertThrows(IllegalArgumentException.class,
                    () -> AvgPool2dFunction.apply(Tensor.zeros(1, 1, 2, 5), 3, 1, 0));
            assertTrue(e.getMessage().contains("avg_pool2d") && e.getMessage().contains("[1, 1, 2, 5]")
                    && e.getMessage().contains("too small"), e.getMessage());
        }
    }
}
