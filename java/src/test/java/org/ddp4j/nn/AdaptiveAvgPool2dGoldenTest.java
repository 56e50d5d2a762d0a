package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.nn.functional.AdaptiveAvgPool2dFunction;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** AdaptiveAvgPool2d values and gradients against PyTorch (scripts/golden/layers_golden.py). */
class AdaptiveAvgPool2dGoldenTest {
    private static final Golden GOLDEN = Golden.load("adaptive_avg_pool2d");

    @ParameterizedTest
    @ValueSource(strings = {"global_7x7", "odd_7x9_to_3x4", "even_8x8_to_2x2", "up_5x4_to_7x6"})
    void matchesPyTorch(String name) {
        int outH = (int) GOLDEN.number(name + ".out_h");
        int outW = (int) GOLDEN.number(name + ".out_w");
        try (var scope = Tensors.scope();
                AdaptiveAvgPool2d pool = outH == outW ? new AdaptiveAvgPool2d(outH) : new AdaptiveAvgPool2d(outH, outW)) {
            Tensor x = GOLDEN.tensor(name + ".x").requiresGrad(true);
            Tensor y = pool.forward(x);
            assertClose(GOLDEN.tensor(name + ".y"), y, 1e-5, 1e-6, name + " y");
            y.backward(GOLDEN.tensor(name + ".grad_y"));
            assertClose(GOLDEN.tensor(name + ".grad_x"), x.grad(), 1e-5, 1e-6, name + " grad_x");
        }
    }

    @Test
    void reprAsPyTorch() {
        // print(nn.AdaptiveAvgPool2d(1)) and print(nn.AdaptiveAvgPool2d((2, 3))).
        assertEquals("AdaptiveAvgPool2d(output_size=1)", new AdaptiveAvgPool2d(1).toString());
        assertEquals("AdaptiveAvgPool2d(output_size=(2, 3))", new AdaptiveAvgPool2d(2, 3).toString());
    }

    @Test
    void badSizesAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> new AdaptiveAvgPool2d(0));
        try (var scope = Tensors.scope()) {
            var e = assertThrows(IllegalArgumentException.class,
                    () -> AdaptiveAvgPool2dFunction.apply(Tensor.zeros(2, 3, 4), 1, 1));
            assertTrue(e.getMessage().contains("adaptive_avg_pool2d") && e.getMessage().contains("[2, 3, 4]"),
                    e.getMessage());
            var e2 = assertThrows(IllegalArgumentException.class,
                    () -> AdaptiveAvgPool2dFunction.apply(Tensor.zeros(1, 1, 0, 4), 1, 1));
            assertTrue(e2.getMessage().contains("empty"), e2.getMessage());
        }
    }
}
