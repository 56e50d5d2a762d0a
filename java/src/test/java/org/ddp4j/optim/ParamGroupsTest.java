package org.ddp4j.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Parameter groups: per-group options and defaults, refused group specs (unknown keys named with
 * the allowed ones), per-group lr, state dicts of several groups through a file, mismatched loads,
 * and a file in the single-group layout that earlier ddp4j versions wrote.
 */
class ParamGroupsTest {
    @TempDir
    Path dir;

    private static Tensor param(float... values) {
        return Tensor.of(values, values.length).requiresGrad(true);
    }

    private static void gradAndStep(Optimizer opt, float grad) {
        for (Tensor p : opt.params()) {
            p.setGrad(Tensor.of(new float[] {grad, -grad}, 2));
        }
        opt.step();
    }

    @Test
    void eachGroupUpdatesWithItsOwnOptionsAndTheRestComeFromTheConstructor() {
        try (var scope = Tensors.scope()) {
            Tensor a = param(1, 1);
            Tensor b = param(1, 1);
            try (SGD opt = new SGD(List.of(Map.of("params", List.of(a)), Map.of("params", b, "lr", 0.5, "weight_decay", 1)),
                    SGD.Options.defaults().lr(0.1))) {
                assertEquals(Map.of("lr", 0.1, "momentum", 0.0, "dampening", 0.0, "weight_decay", 0.0, "nesterov", false),
                        opt.paramGroups().get(0).options());
                assertEquals(Map.of("lr", 0.5, "momentum", 0.0, "dampening", 0.0, "weight_decay", 1.0, "nesterov", false),
                        opt.paramGroups().get(1).options());
                assertEquals(List.of(a, b), opt.params());
                gradAndStep(opt, 1);
                assertArrayEquals(new float[] {0.9f, 1.1f}, a.toFloatArray(), 1e-7f);
                // p - lr * (g + wd * p) = 1 - 0.5 * (±1 + 1)
                assertArrayEquals(new float[] {0f, 1f}, b.toFloatArray(), 1e-7f);
            }
        }
    }

    @Test
    void anUnknownKeyIsRefusedNamingItAndTheAllowedKeys() {
        try (var scope = Tensors.scope()) {
            Tensor a = param(1, 2);
            Tensor b = param(3, 4);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new SGD(
                    List.of(Map.of("params", List.of(a), "weight_decy", 0.0)), SGD.Options.defaults()));
            assertEquals("SGD: unknown parameter group option 'weight_decy' (allowed: params, lr, momentum, dampening,"
                    + " weight_decay, nesterov)", e.getMessage());
            try (AdamW opt = new AdamW(List.of(a))) {
                e = assertThrows(IllegalArgumentException.class,
                        () -> opt.addParamGroup(Map.of("params", List.of(b), "momentum", 0.9)));
                assertEquals("AdamW: unknown parameter group option 'momentum' (allowed: params, lr, betas, eps,"
                        + " weight_decay, amsgrad, maximize)", e.getMessage());
                e = assertThrows(IllegalArgumentException.class, () -> opt.paramGroups().get(0).set("beta1", 0.8));
                assertEquals("AdamW: unknown parameter group option 'beta1' (allowed: params, lr, betas, eps,"
                        + " weight_decay, amsgrad, maximize)", e.getMessage());
                assertEquals(1, opt.paramGroups().size(), "a refused group was added");
            }
        }
    }

    @Test
    void badGroupSpecsAreRefusedAndNothingChanges() {
        try (var scope = Tensors.scope()) {
            Tensor a = param(1, 2);
            Tensor b = param(3, 4);
            try (Adam opt = new Adam(List.of(a))) {
                assertEquals("Invalid learning rate: -1.0", assertThrows(IllegalArgumentException.class,
                        () -> opt.addParamGroup(Map.of("params", List.of(b), "lr", -1))).getMessage());
                assertEquals("Invalid beta parameter at index 1: 1.5", assertThrows(IllegalArgumentException.class,
                        () -> opt.addParamGroup(Map.of("params", List.of(b), "betas", List.of(0.9, 1.5)))).getMessage());
                assertEquals("Adam: parameter group option 'amsgrad' must be a boolean, got 1 (Integer)",
                        assertThrows(IllegalArgumentException.class,
                                () -> opt.addParamGroup(Map.of("params", List.of(b), "amsgrad", 1))).getMessage());
                assertEquals("Adam: some parameters appear in more than one parameter group (float32[2] on cpu)",
                        assertThrows(IllegalArgumentException.class,
                                () -> opt.addParamGroup(Map.of("params", List.of(a)))).getMessage());
                String noParams = assertThrows(IllegalArgumentException.class,
                        () -> opt.addParamGroup(Map.of("lr", 0.1))).getMessage();
                assertEquals("Adam: a parameter group needs 'params', a collection of tensors or a tensor; got none"
                        + " (keys: [lr])", noParams);
                assertEquals("Invalid weight_decay value: -0.5", assertThrows(IllegalArgumentException.class,
                        () -> opt.paramGroups().get(0).set("weight_decay", -0.5)).getMessage());
                assertEquals(1, opt.paramGroups().size());
                assertEquals(0.0, opt.weightDecay());
                opt.addParamGroup(Map.of("params", List.of(b), "betas", new double[] {0.5, 0.6}));
                assertEquals(List.of(0.5, 0.6), opt.paramGroups().get(1).get("betas"));
                assertEquals(0.9, opt.beta1(), "the first group keeps the constructor's betas");
            }
            assertEquals("SGD got an empty parameter list", assertThrows(IllegalArgumentException.class,
                    () -> new SGD(List.<Map<String, ?>>of(), SGD.Options.defaults())).getMessage());
        }
    }

    @Test
    void setLrSetsEveryGroupAndAGroupsLrOnlyItsOwn() {
        try (var scope = Tensors.scope();
                SGD opt = new SGD(List.of(Map.of("params", param(1, 2)), Map.of("params", param(3, 4), "lr", 0.2)),
                        SGD.Options.defaults().lr(0.1))) {
            opt.paramGroups().get(1).setLr(0.3);
            assertEquals(0.1, opt.paramGroups().get(0).lr());
            assertEquals(0.3, opt.paramGroups().get(1).lr());
            opt.setLr(0.05);
            assertEquals(0.05, opt.paramGroups().get(0).lr());
            assertEquals(0.05, opt.paramGroups().get(1).lr());
            assertEquals("Invalid learning rate: -1.0",
                    assertThrows(IllegalArgumentException.class, () -> opt.setLr(-1)).getMessage());
            assertEquals(0.05, opt.paramGroups().get(1).lr());
        }
    }

    @Test
    void aStateDictOfTwoGroupsSurvivesAFileAndContinuesBitForBit() {
        Path file = dir.resolve("groups.optim.safetensors");
        try (var scope = Tensors.scope()) {
            Tensor a = param(1, 2);
            Tensor b = param(3, 4);
            Tensor a2 = param(0, 0);
            Tensor b2 = param(0, 0);
            try (Adam opt = new Adam(List.of(Map.of("params", a), Map.of("params", b, "lr", 0.05, "amsgrad", true)),
                    Adam.Options.defaults().lr(0.01));
                    Adam restored = new Adam(List.of(Map.of("params", a2), Map.of("params", b2)), Adam.Options.defaults())) {
                gradAndStep(opt, 1);
                gradAndStep(opt, 0.5f);
                OptimizerStateDict sd = opt.stateDict();
                assertEquals(List.of(0), sd.paramGroups().get(0).get("params"));
                assertEquals(List.of(1), sd.paramGroups().get(1).get("params"));
                assertEquals(List.of("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"), List.copyOf(sd.state().get(1).keySet()));
                sd.save(file);
                restored.loadStateDict(OptimizerStateDict.load(file));
                assertEquals(opt.paramGroups().get(0).options(), restored.paramGroups().get(0).options());
                assertEquals(opt.paramGroups().get(1).options(), restored.paramGroups().get(1).options());
                assertEquals(2, restored.stepCount(b2));
                a2.copyFrom(a);
                b2.copyFrom(b);
                gradAndStep(opt, -2);
                gradAndStep(restored, -2);
                assertArrayEquals(a.toFloatArray(), a2.toFloatArray());
                assertArrayEquals(b.toFloatArray(), b2.toFloatArray());
            }
        }
    }

    @Test
    void loadsWithAnotherGroupCountOrGroupSizeAreRefusedClearly() {
        try (var scope = Tensors.scope()) {
            Tensor a = param(1, 2);
            Tensor b = param(3, 4);
            try (SGD two = new SGD(List.of(Map.of("params", a), Map.of("params", b)), SGD.Options.defaults().momentum(0.9));
                    SGD one = new SGD(List.of(a, b), 0.1);
                    SGD skewed = new SGD(List.of(Map.of("params", List.of(a, b)), Map.of("params", List.of())),
                            SGD.Options.defaults())) {
                gradAndStep(two, 1);
                Tensor buffer = two.momentumBuffer(a);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> two.loadStateDict(one.stateDict()));
                assertEquals("SGD.loadStateDict: the state dict has 1 parameter groups but this optimizer has 2 (loaded"
                        + " state dict has a different number of parameter groups)", e.getMessage());
                e = assertThrows(IllegalArgumentException.class, () -> two.loadStateDict(skewed.stateDict()));
                assertEquals("SGD.loadStateDict: the state dict's parameter group 0 has 2 parameters but this optimizer's"
                        + " has 1 (loaded state dict contains a parameter group that doesn't match the size of optimizer's"
                        + " group)", e.getMessage());
                Map<String, Object> misspelt = new java.util.LinkedHashMap<>(two.stateDict().paramGroups().get(1));
                misspelt.put("weight_decy", 0.0);
                OptimizerStateDict bad = new OptimizerStateDict("SGD", Map.of(),
                        List.of(two.stateDict().paramGroups().get(0), misspelt));
                e = assertThrows(IllegalArgumentException.class, () -> two.loadStateDict(bad));
                assertEquals("SGD: unknown parameter group option 'weight_decy' (allowed: params, lr, momentum, dampening,"
                        + " weight_decay, nesterov)", e.getMessage());
                assertEquals(buffer, two.momentumBuffer(a), "a refused load changed the state");
                assertEquals(0.9, two.paramGroups().get(1).number("momentum"));
            }
        }
    }

    /** The layout of a file that ddp4j wrote before parameter groups (one group), as the demos' former .optim file. */
    @Test
    void aSingleGroupFileOfEarlierVersionsStillLoads() {
        Path file = dir.resolve("old.optim.safetensors");
        try (var scope = Tensors.scope()) {
            SafeTensors.saveFile(Map.of("state.1.step", Tensor.scalar(3), "state.1.exp_avg", Tensor.of(new float[] {1, 2}, 2),
                    "state.1.exp_avg_sq", Tensor.of(new float[] {3, 4}, 2)), file, Map.of("optimizer", "AdamW",
                    "param_groups", "[{\"lr\":0.002,\"betas\":[0.9,0.999],\"eps\":1.0E-8,\"weight_decay\":0.01,"
                            + "\"amsgrad\":false,\"maximize\":false,\"params\":[0,1]}]", "epoch", "1"));
            Tensor a = param(1, 2);
            Tensor b = param(3, 4);
            try (AdamW opt = new AdamW(List.of(a, b))) {
                opt.loadStateDict(OptimizerStateDict.load(file));
                assertEquals(0.002, opt.lr());
                assertEquals(3, opt.stepCount(b));
                assertEquals(0, opt.stepCount(a));
                assertArrayEquals(new float[] {3, 4}, opt.expAvgSq(b).toFloatArray());
            }
        }
    }
}
