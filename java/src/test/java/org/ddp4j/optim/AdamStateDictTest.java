package org.ddp4j.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Linear;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Adam's and AdamW's state dicts: PyTorch's names, a save / load / continue that equals the
 * uninterrupted run bit for bit, and loads that are refused with a message.
 */
class AdamStateDictTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"adam_wd_amsgrad", "adamw"})
    void savedStateContinuesBitForBit(String variant) {
        Golden g = Golden.load("adam");
        Path file = dir.resolve(variant + ".optim.safetensors");
        float[] savedWeight;
        float[] savedBias;
        float[] uninterruptedWeight;
        float[] uninterruptedBias;
        try (Linear model = AdamGoldenTest.goldenModel(g);
                AbstractAdam opt = AdamGoldenTest.optimizerFor(g, variant, model.parameters())) {
            for (int t = 0; t < 3; t++) {
                AdamGoldenTest.trainStep(g, model, opt, t);
            }
            OptimizerStateDict state = opt.stateDict();
            assertEquals(opt.amsgrad() ? List.of("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")
                    : List.of("step", "exp_avg", "exp_avg_sq"), List.copyOf(state.state().get(0).keySet()));
            assertEquals(3f, state.state().get(1).get("step").item());
            Map<String, Object> group = state.paramGroups().get(0);
            assertEquals(List.of(g.number(variant + ".beta1"), g.number(variant + ".beta2")), group.get("betas"));
            state.save(file);
            savedWeight = model.weight().toFloatArray();
            savedBias = model.bias().toFloatArray();
            for (int t = 3; t < 5; t++) {
                AdamGoldenTest.trainStep(g, model, opt, t);
            }
            uninterruptedWeight = model.weight().toFloatArray();
            uninterruptedBias = model.bias().toFloatArray();
        }
        try (Linear model = AdamGoldenTest.goldenModel(g);
                AbstractAdam opt = variant.startsWith("adamw") ? new AdamW(model.parameters()) : new Adam(model.parameters());
                var scope = Tensors.scope()) {
            model.weight().copyFrom(Tensor.of(savedWeight, 3, 4));
            model.bias().copyFrom(Tensor.of(savedBias, 3));
            opt.loadStateDict(OptimizerStateDict.load(file)); // hyper-parameters come with it, as in PyTorch
            assertEquals(g.number(variant + ".lr"), opt.lr());
            assertEquals(3, opt.stepCount(model.weight()));
            for (int t = 3; t < 5; t++) {
                AdamGoldenTest.trainStep(g, model, opt, t);
            }
            assertArrayEquals(uninterruptedWeight, model.weight().toFloatArray());
            assertArrayEquals(uninterruptedBias, model.bias().toFloatArray());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"adam"})
    void mismatchedStateIsRefusedAndNothingChanges(String variant) {
        Golden g = Golden.load("adam");
        try (Linear model = AdamGoldenTest.goldenModel(g); Adam opt = new Adam(model.parameters());
                Adam amsgrad = new Adam(model.parameters(), Adam.Options.defaults().amsgrad(true));
                SGD sgd = new SGD(model.parameters(), 0.1); var scope = Tensors.scope()) {
            AdamGoldenTest.trainStep(g, model, opt, 0);
            OptimizerStateDict plain = opt.stateDict();
            String wrongKind = assertThrows(IllegalArgumentException.class, () -> sgd.loadStateDict(plain)).getMessage();
            assertEquals("SGD.loadStateDict: the state dict is of optimizer 'Adam', not SGD", wrongKind);
            assertEquals("AdamW.loadStateDict: the state dict is of optimizer 'Adam', not AdamW",
                    assertThrows(IllegalArgumentException.class,
                            () -> new AdamW(model.parameters()).loadStateDict(plain)).getMessage());
            // amsgrad=true in the group but no max_exp_avg_sq saved
            Map<String, Object> group = new java.util.LinkedHashMap<>(plain.paramGroups().get(0));
            group.put("amsgrad", true);
            OptimizerStateDict noMax = new OptimizerStateDict("Adam", plain.state(), List.of(group));
            String missing = assertThrows(IllegalArgumentException.class, () -> amsgrad.loadStateDict(noMax)).getMessage();
            assertTrue(missing.contains("parameter 0 has no 'max_exp_avg_sq' state"), missing);
            OptimizerStateDict wrongShape = new OptimizerStateDict("Adam", Map.of(0, Map.of("step", Tensor.scalar(1),
                    "exp_avg", Tensor.zeros(5), "exp_avg_sq", Tensor.zeros(3, 4))), plain.paramGroups());
            String shape = assertThrows(IllegalArgumentException.class, () -> opt.loadStateDict(wrongShape)).getMessage();
            assertTrue(shape.contains("exp_avg of parameter 0 is") && shape.contains("another model"), shape);
            assertEquals(1, opt.stepCount(model.weight()), "a refused load changed the state");
        }
    }
}
