package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/** Init.kaimingNormal and calculateGain as torch.nn.init's (the gains are PyTorch's documented constants). */
class InitKaimingNormalTest {

    @Test
    void gainsArePyTorchs() {
        assertEquals(1, Init.calculateGain("conv2d", 0), 0);
        assertEquals(1, Init.calculateGain("sigmoid", 0), 0);
        assertEquals(5.0 / 3, Init.calculateGain("tanh", 0), 1e-15);
        assertEquals(Math.sqrt(2), Init.calculateGain("relu", 0), 1e-15);
        assertEquals(Math.sqrt(2 / (1 + 0.01 * 0.01)), Init.calculateGain("leaky_relu", 0.01), 1e-15);
        assertEquals(0.75, Init.calculateGain("selu", 0), 0);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Init.calculateGain("gelu", 0));
        assertTrue(e.getMessage().contains("unsupported nonlinearity 'gelu'"), e.getMessage());
    }

    @Test
    void stdIsGainOverSqrtOfTheChosenFan() {
        try (var scope = Tensors.scope()) {
            // [128, 32, 3, 3]: fan_in 288, fan_out 1152, 36864 samples (std's standard error 0.4%).
            Tensor w = Tensor.zeros(128, 32, 3, 3);
            assertEquals(288, Init.fanIn(w));
            assertEquals(1152, Init.fanOut(w));
            for (Init.FanMode mode : Init.FanMode.values()) {
                Init.kaimingNormal(w, 0, mode, "relu", new Generator(5));
                double expected = Math.sqrt(2.0 / (mode == Init.FanMode.FAN_IN ? 288 : 1152));
                float[] v = w.toFloatArray();
                double sq = 0;
                for (float x : v) {
                    sq += (double) x * x;
                }
                assertEquals(expected, Math.sqrt(sq / v.length), 0.02 * expected, mode.toString());
            }
            assertThrows(IllegalArgumentException.class, () -> Init.kaimingNormal(Tensor.zeros(4), 0, Init.FanMode.FAN_OUT, "relu",
                    new Generator(0)));
        }
    }
}
