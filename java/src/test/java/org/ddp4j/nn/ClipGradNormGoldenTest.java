package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.nn.utils.ClipGradNorm;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * clipGradNorm against torch.nn.utils.clip_grad_norm_ (golden/clip_grad_norm.json): 2-, 1- and
 * inf-norms, clipping and not, a parameter without gradient skipped; refused arguments.
 */
class ClipGradNormGoldenTest {
    @ParameterizedTest
    @ValueSource(strings = {"l2_clipped", "l2_unclipped", "inf_clipped", "inf_unclipped", "l1_clipped"})
    void matchesPyTorch(String name) {
        Golden g = Golden.load("clip_grad_norm");
        try (var scope = Tensors.scope()) {
            List<Tensor> params = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                Tensor grad = g.tensor("grad" + i);
                Tensor p = Tensor.zeros(grad.shape()).requiresGrad(true);
                p.setGrad(grad);
                params.add(p);
            }
            Tensor noGrad = Tensor.ones(3).requiresGrad(true);
            params.add(noGrad);
            double normType = g.number(name + ".norm_type") < 0 ? Double.POSITIVE_INFINITY : g.number(name + ".norm_type");
            double total = ClipGradNorm.clipGradNorm(params, g.number(name + ".max_norm"), normType);
            assertEquals(g.number(name + ".total_norm"), total, 1e-5 * g.number(name + ".total_norm"), name + " total norm");
            for (int i = 0; i < 3; i++) {
                assertClose(g.floats(name + ".grad" + i), params.get(i).grad().toFloatArray(), 1e-5, 1e-7, name + " grad" + i);
            }
            assertNull(noGrad.grad());
        }
    }

    @Test
    void noGradientsGiveZeroAndBadArgumentsAreRefused() {
        try (var scope = Tensors.scope()) {
            Tensor p = Tensor.ones(2).requiresGrad(true);
            assertEquals(0.0, ClipGradNorm.clipGradNorm(List.of(p), 1.0));
            p.setGrad(Tensor.of(new float[] {3, 4}, 2));
            assertEquals("clipGradNorm: max_norm must be non-negative, got -1.0", assertThrows(IllegalArgumentException.class,
                    () -> ClipGradNorm.clipGradNorm(List.of(p), -1)).getMessage());
            assertThrows(IllegalArgumentException.class, () -> ClipGradNorm.clipGradNorm(List.of(p), 1, 0));
            p.grad().copyFrom(Tensor.of(new float[] {Float.NaN, 1}, 2));
            String message = assertThrows(IllegalArgumentException.class,
                    () -> ClipGradNorm.clipGradNorm(List.of(p), 1, 2, true)).getMessage();
            assertTrue(message.startsWith("The total norm of order 2.0 for gradients from `parameters` is non-finite"), message);
            assertTrue(Float.isNaN(p.grad().toFloatArray()[0]) && p.grad().toFloatArray()[1] == 1, "refused clip changed grads");
        }
    }
}
