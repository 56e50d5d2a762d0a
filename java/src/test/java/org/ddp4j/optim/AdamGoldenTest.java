package org.ddp4j.optim;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.ddp4j.internal.AdamNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * torch.optim.Adam and AdamW (defaults, weight decay, amsgrad, other betas and eps) training a
 * Linear(4, 3) on MSE for five steps against PyTorch (golden/adam.json, optim_golden.py); the
 * state after them; validation and skipped parameters.
 */
class AdamGoldenTest {
    /** A Linear(4, 3) holding the golden initial weights. */
    static Linear goldenModel(Golden g) {
        Linear model = new Linear(4, 3, true, new Generator(0));
        model.weight().copyFrom(g.tensor("w0"));
        model.bias().copyFrom(g.tensor("b0"));
        return model;
    }

    /** One optimizer step on the golden batch t: zero_grad, MSE backward, step. */
    static void trainStep(Golden g, Linear model, Optimizer opt, int t) {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.ofRegion(g.floats("xs"), t * 24, 6, 4);
            Tensor y = Tensor.ofRegion(g.floats("ys"), t * 18, 6, 3);
            opt.zeroGrad();
            new MSELoss().forward(model.forward(x), y).backward();
            opt.step();
        }
    }

    static AbstractAdam optimizerFor(Golden g, String variant, List<Tensor> params) {
        String kind = g.text(variant + ".optimizer");
        double lr = g.number(variant + ".lr");
        double b1 = g.number(variant + ".beta1");
        double b2 = g.number(variant + ".beta2");
        double eps = g.number(variant + ".eps");
        double wd = g.number(variant + ".weight_decay");
        boolean amsgrad = g.number(variant + ".amsgrad") != 0;
        return switch (kind) {
            case "Adam" -> new Adam(params, Adam.Options.defaults().lr(lr).betas(b1, b2).eps(eps).weightDecay(wd)
                    .amsgrad(amsgrad));
            case "AdamW" -> new AdamW(params, AdamW.Options.defaults().lr(lr).betas(b1, b2).eps(eps).weightDecay(wd)
                    .amsgrad(amsgrad));
            default -> throw new IllegalArgumentException(kind);
        };
    }

    @ParameterizedTest
    @ValueSource(strings = {"adam", "adam_wd_amsgrad", "adam_betas_eps", "adamw", "adamw_amsgrad"})
    void fiveStepsMatchPyTorch(String variant) {
        Golden g = Golden.load("adam");
        int steps = (int) g.number("steps");
        try (Linear model = goldenModel(g); AbstractAdam opt = optimizerFor(g, variant, model.parameters())) {
            float[] weights = g.floats(variant + ".weights");
            float[] biases = g.floats(variant + ".biases");
            for (int t = 0; t < steps; t++) {
                trainStep(g, model, opt, t);
                assertClose(Arrays.copyOfRange(weights, t * 12, (t + 1) * 12), model.weight().toFloatArray(), 1e-5, 1e-6,
                        variant + " weight after step " + (t + 1));
                assertClose(Arrays.copyOfRange(biases, t * 3, (t + 1) * 3), model.bias().toFloatArray(), 1e-5, 1e-6,
                        variant + " bias after step " + (t + 1));
            }
            Tensor w = model.weight();
            assertEquals((long) g.number(variant + ".weight.step"), opt.stepCount(w));
            assertClose(g.floats(variant + ".weight.exp_avg"), opt.expAvg(w).toFloatArray(), 1e-5, 1e-7, "exp_avg");
            assertClose(g.floats(variant + ".weight.exp_avg_sq"), opt.expAvgSq(w).toFloatArray(), 1e-5, 1e-9, "exp_avg_sq");
            OptimizerStateDict state = opt.stateDict();
            if (opt.amsgrad()) {
                assertClose(g.floats(variant + ".weight.max_exp_avg_sq"),
                        state.state().get(0).get(AbstractAdam.MAX_EXP_AVG_SQ).toFloatArray(), 1e-5, 1e-9, "max_exp_avg_sq");
            } else {
                assertTrue(!state.state().get(0).containsKey(AbstractAdam.MAX_EXP_AVG_SQ));
            }
        }
    }

    @Test
    void defaultsArePyTorchs() {
        try (var scope = Tensors.scope()) {
            List<Tensor> params = List.of(Tensor.zeros(2).requiresGrad(true));
            try (Adam adam = new Adam(params); AdamW adamw = new AdamW(params)) {
                assertEquals("Adam(lr=0.001, betas=(0.9, 0.999), eps=1.0E-8, weight_decay=0.0, amsgrad=false)", adam.toString());
                assertEquals("AdamW(lr=0.001, betas=(0.9, 0.999), eps=1.0E-8, weight_decay=0.01, amsgrad=false)",
                        adamw.toString());
            }
        }
    }

    @Test
    void badHyperParametersAreRefusedInPyTorchsWords() {
        try (var scope = Tensors.scope()) {
            List<Tensor> params = List.of(Tensor.zeros(2).requiresGrad(true));
            assertEquals("Invalid learning rate: -0.1", assertThrows(IllegalArgumentException.class,
                    () -> new Adam(params, -0.1)).getMessage());
            assertEquals("Invalid beta parameter at index 0: 1.0", assertThrows(IllegalArgumentException.class,
                    () -> new Adam(params, Adam.Options.defaults().betas(1.0, 0.999))).getMessage());
            assertEquals("Invalid beta parameter at index 1: -0.5", assertThrows(IllegalArgumentException.class,
                    () -> new AdamW(params, AdamW.Options.defaults().betas(0.9, -0.5))).getMessage());
            assertEquals("Invalid epsilon value: -1.0", assertThrows(IllegalArgumentException.class,
                    () -> new Adam(params, Adam.Options.defaults().eps(-1))).getMessage());
            assertEquals("Invalid weight_decay value: -0.01", assertThrows(IllegalArgumentException.class,
                    () -> new AdamW(params, AdamW.Options.defaults().weightDecay(-0.01))).getMessage());
            assertThrows(IllegalArgumentException.class, () -> new Adam(List.of()));
            try (Adam adam = new Adam(params)) {
                assertEquals("Invalid learning rate: NaN",
                        assertThrows(IllegalArgumentException.class, () -> adam.setLr(Double.NaN)).getMessage());
            }
        }
    }

    @Test
    void parametersWithoutGradientAreSkippedAndKeepNoState() {
        try (var scope = Tensors.scope()) {
            Tensor a = Tensor.of(new float[] {1, 2}, 2).requiresGrad(true);
            Tensor b = Tensor.of(new float[] {3, 4}, 2).requiresGrad(true);
            a.setGrad(Tensor.of(new float[] {0.5f, -0.5f}, 2));
            try (Adam opt = new Adam(List.of(a, b), 0.1)) {
                opt.step();
                // First Adam step moves each element by lr * sign(g) (to rounding): m / sqrt(v) = ±1 after bias correction.
                assertClose(new float[] {0.9f, 2.1f}, a.toFloatArray(), 1e-6, 1e-6, "a");
                assertClose(new float[] {3, 4}, b.toFloatArray(), 0, 0, "b");
                assertEquals(1, opt.stepCount(a));
                assertEquals(0, opt.stepCount(b));
                assertNull(opt.expAvg(b));
                assertEquals(List.of(0), List.copyOf(opt.stateDict().state().keySet()));
            }
        }
    }

    @Test
    void theNativeUpdateRefusesMismatchedStateNamingBothShapes() {
        try (var scope = Tensors.scope()) {
            Tensor p = Tensor.zeros(2);
            Tensor g = Tensor.zeros(2);
            String message = assertThrows(IllegalArgumentException.class, () -> AdamNatives.adamStep(TensorHandles.nativeHandle(p),
                    TensorHandles.nativeHandle(g), TensorHandles.nativeHandle(Tensor.zeros(3)), TensorHandles.nativeHandle(Tensor.zeros(2)), 0, 1e-3, 0.9, 0.999,
                    1e-8, 0, false, false, 1)).getMessage();
            assertTrue(message.contains("adam: param [2] and exp_avg [3] must have the same shape"), message);
            message = assertThrows(IllegalArgumentException.class, () -> AdamNatives.adamStep(TensorHandles.nativeHandle(p),
                    TensorHandles.nativeHandle(g), TensorHandles.nativeHandle(Tensor.zeros(2)), TensorHandles.nativeHandle(Tensor.zeros(2)), 0, 1e-3, 0.9, 0.999,
                    1e-8, 0, true, false, 1)).getMessage();
            assertTrue(message.contains("adam: missing max_exp_avg_sq"), message);
            message = assertThrows(IllegalArgumentException.class, () -> AdamNatives.adamStep(TensorHandles.nativeHandle(p),
                    TensorHandles.nativeHandle(g), TensorHandles.nativeHandle(Tensor.zeros(2)), TensorHandles.nativeHandle(Tensor.zeros(2)), 0, 1e-3, 0.9, 0.999,
                    1e-8, 0, false, false, 0)).getMessage();
            assertTrue(message.contains("adam: step must be at least 1"), message);
        }
    }
}
