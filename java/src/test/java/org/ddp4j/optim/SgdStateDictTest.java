package org.ddp4j.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** SGD's state dict: PyTorch's structure, its file form, loading (values and hyper-parameters) and errors. */
class SgdStateDictTest {
    @TempDir
    Path dir;

    /** Two parameters; only the first gets a gradient, so only it has momentum state. */
    private static List<Tensor> params() {
        return List.of(Tensor.of(new float[] {1, 2, 3, 4}, 2, 2).keep().requiresGrad(true),
                Tensor.of(new float[] {5, 6}, 2).keep().requiresGrad(true));
    }

    private static void free(Tensor p) {
        if (p.grad() != null) {
            p.grad().close();
        }
        p.close();
    }

    private static void stepWithGrad(SGD opt, float[] grad) {
        Tensor p = opt.params().get(0);
        if (p.grad() == null) {
            p.setGrad(Tensor.of(grad, 2, 2).keep());
        } else {
            p.grad().copyFrom(Tensor.of(grad, 2, 2));
        }
        opt.step();
    }

    @Test
    void stateDictHasPyTorchsStructureAndSurvivesAFile() {
        List<Tensor> ps = params();
        try (var scope = Tensors.scope(); SGD opt = new SGD(ps, 0.1, 0.9, 0.0, 0.01, true)) {
            OptimizerStateDict empty = opt.stateDict();
            assertEquals(Map.of(), empty.state(), "no momentum buffer before the first step, as in PyTorch");
            stepWithGrad(opt, new float[] {1, 1, 1, 1});
            OptimizerStateDict sd = opt.stateDict();
            assertEquals("SGD", sd.optimizer());
            assertEquals(List.of(0), List.copyOf(sd.state().keySet()));
            assertEquals(List.of("momentum_buffer"), List.copyOf(sd.state().get(0).keySet()));
            Map<String, Object> group = new LinkedHashMap<>();
            group.put("lr", 0.1);
            group.put("momentum", 0.9);
            group.put("dampening", 0.0);
            group.put("weight_decay", 0.01);
            group.put("nesterov", true);
            group.put("params", List.of(0, 1));
            assertEquals(List.of(group), sd.paramGroups());
            assertEquals(List.of("state.0.momentum_buffer"), List.copyOf(sd.tensors().keySet()));
            assertEquals("[{\"lr\":0.1,\"momentum\":0.9,\"dampening\":0.0,\"weight_decay\":0.01,\"nesterov\":true,"
                    + "\"params\":[0,1]}]", sd.metadata().get("param_groups"));

            Path file = dir.resolve("sgd.safetensors");
            sd.save(file);
            OptimizerStateDict back = OptimizerStateDict.load(file);
            assertEquals(sd.paramGroups(), back.paramGroups());
            assertEquals("SGD", back.optimizer());
            assertArrayEquals(sd.state().get(0).get("momentum_buffer").toFloatArray(),
                    back.state().get(0).get("momentum_buffer").toFloatArray());
        } finally {
            ps.forEach(SgdStateDictTest::free);
        }
    }

    @Test
    void loadingRestoresMomentumAndHyperParametersSoStepsContinueIdentically() {
        List<Tensor> a = params();
        List<Tensor> b = params();
        try (var scope = Tensors.scope(); SGD original = new SGD(a, 0.1, 0.9, 0.1, 0.01, false);
                SGD restored = new SGD(b, 0.5, 0.0, 0.0, 0.0, false)) {
            stepWithGrad(original, new float[] {1, -2, 3, -4});
            stepWithGrad(original, new float[] {0.5f, 0.5f, 0.5f, 0.5f});
            b.get(0).copyFrom(a.get(0));
            restored.loadStateDict(original.stateDict());
            assertEquals(0.1, restored.lr());
            assertEquals(0.9, restored.momentum());
            assertEquals(0.1, restored.dampening());
            assertEquals(0.01, restored.weightDecay());
            assertArrayEquals(original.momentumBuffer(a.get(0)).toFloatArray(), restored.momentumBuffer(b.get(0)).toFloatArray());
            assertTrue(original.momentumBuffer(a.get(0)) != restored.momentumBuffer(b.get(0)), "a copy, not the same tensor");
            assertNull(restored.momentumBuffer(b.get(1)));
            stepWithGrad(original, new float[] {2, 2, -1, 0});
            stepWithGrad(restored, new float[] {2, 2, -1, 0});
            assertArrayEquals(a.get(0).toFloatArray(), b.get(0).toFloatArray());
        } finally {
            a.forEach(SgdStateDictTest::free);
            b.forEach(SgdStateDictTest::free);
        }
    }

    @Test
    void mismatchedStateDictsAreRefusedNamingTheProblem() {
        List<Tensor> ps = params();
        try (var scope = Tensors.scope(); SGD opt = new SGD(ps, 0.1, 0.9, 0, 0, false);
                SGD one = new SGD(List.of(ps.get(1)), 0.1, 0.9, 0, 0, false)) {
            stepWithGrad(opt, new float[] {1, 1, 1, 1});
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> one.loadStateDict(opt.stateDict()));
            assertEquals("SGD.loadStateDict: the state dict's parameter group 0 has 2 parameters but this optimizer's has 1"
                    + " (loaded state dict contains a parameter group that doesn't match the size of optimizer's group)",
                    e.getMessage());

            OptimizerStateDict wrongShape = new OptimizerStateDict("SGD", Map.of(1, Map.of("momentum_buffer", Tensor.zeros(3))),
                    opt.stateDict().paramGroups());
            e = assertThrows(IllegalArgumentException.class, () -> opt.loadStateDict(wrongShape));
            assertEquals("SGD.loadStateDict: momentum_buffer of parameter 1 is float32[3] on cpu but the parameter is"
                    + " float32[2] on cpu (a state dict of another model?)", e.getMessage());
            assertTrue(opt.momentumBuffer(ps.get(0)) != null, "a refused load changes nothing");

            OptimizerStateDict adam = new OptimizerStateDict("Adam", Map.of(), opt.stateDict().paramGroups());
            e = assertThrows(IllegalArgumentException.class, () -> opt.loadStateDict(adam));
            assertEquals("SGD.loadStateDict: the state dict is of optimizer 'Adam', not SGD", e.getMessage());
        } finally {
            ps.forEach(SgdStateDictTest::free);
        }
    }

    @Test
    void aModelFileIsNotAnOptimizerState() {
        Path file = dir.resolve("model.safetensors");
        try (var scope = Tensors.scope()) {
            SafeTensors.saveFile(Map.of("fc.bias", Tensor.zeros(2)), file);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> OptimizerStateDict.load(file));
            assertEquals(file + " is not an optimizer state: its metadata lacks 'optimizer' or 'param_groups' (a model's"
                    + " state dict? load it with Module.loadStateDict)", e.getMessage());
        }
    }
}
