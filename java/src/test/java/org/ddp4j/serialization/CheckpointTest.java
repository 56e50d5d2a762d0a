package org.ddp4j.serialization;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Dropout;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.ReLU;
import org.ddp4j.nn.Sequential;
import org.ddp4j.optim.SGD;
import org.ddp4j.optim.StepLR;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One file holds a run's state: 2 epochs with Dropout equal 1 epoch, a save, a fresh start from
 * the file and 1 more epoch, bit for bit; without the generator's state they differ.
 */
class CheckpointTest {
    @TempDir
    Path dir;

    /** A model, its optimizer, schedule and Dropout generator, built the same way every time. */
    private static final class Run {
        final Generator generator = new Generator(3);
        final Module model = new Sequential(new Linear(6, 8, true, generator), new ReLU(), new Dropout(0.3, generator),
                new Linear(8, 2, true, generator));
        final SGD optimizer = new SGD(model.parameters(), SGD.Options.defaults().lr(0.1).momentum(0.9));
        final StepLR scheduler = new StepLR(optimizer, 1, 0.5);

        void epoch() {
            float[] x = new Generator(11).uniform(5 * 4 * 6, -1f, 1f);
            float[] y = new Generator(12).uniform(5 * 4 * 2, -1f, 1f);
            for (int b = 0; b < 5; b++) {
                try (var scope = Tensors.scope()) {
                    Tensor loss = new MSELoss().forward(model.forward(Tensor.ofRegion(x, b * 4 * 6, 4, 6)),
                            Tensor.ofRegion(y, b * 4 * 2, 4, 2));
                    optimizer.zeroGrad();
                    loss.backward();
                    optimizer.step();
                }
            }
            scheduler.step();
        }

        Map<String, float[]> parameters() {
            Map<String, float[]> out = new LinkedHashMap<>();
            model.namedParameters().forEach((k, v) -> out.put(k, v.toFloatArray()));
            return out;
        }
    }

    private static void assertSame(Map<String, float[]> a, Map<String, float[]> b) {
        assertEquals(a.keySet(), b.keySet());
        a.forEach((k, v) -> assertArrayEquals(v, b.get(k), k));
    }

    private static long differing(Map<String, float[]> a, Map<String, float[]> b) {
        return a.keySet().stream().filter(k -> !java.util.Arrays.equals(a.get(k), b.get(k))).count();
    }

    @Test
    void twoEpochsEqualOnePlusOneResumedWithDropout() {
        Run straight = new Run();
        straight.epoch();
        straight.epoch();

        Run first = new Run();
        first.epoch();
        Path file = dir.resolve("run.safetensors");
        new Checkpoint().put("model", first.model).put("optimizer", first.optimizer).put("scheduler", first.scheduler)
                .put("epoch", 1).put("step", 5L).put("rng", first.generator).put("note", "after epoch 1").save(file);

        Run resumed = new Run();
        try (var scope = Tensors.scope()) {
            Checkpoint c = Checkpoint.load(file);
            c.restore("model", resumed.model);
            c.restore("optimizer", resumed.optimizer);
            c.restore("scheduler", resumed.scheduler);
            c.restore("rng", resumed.generator);
            assertEquals(1, c.getInt("epoch"));
            assertEquals(5L, c.getLong("step"));
            assertEquals("after epoch 1", c.getString("note"));
            assertEquals(List.of("model", "optimizer", "scheduler", "epoch", "step", "rng", "note"), List.copyOf(c.keys()));
        }
        assertEquals(first.scheduler.getLastLr(), resumed.scheduler.getLastLr());
        resumed.epoch();
        assertSame(straight.parameters(), resumed.parameters());

        // the same without the generator's state: the Dropout masks of epoch 2 differ
        Run noRng = new Run();
        try (var scope = Tensors.scope()) {
            Checkpoint c = Checkpoint.load(file);
            c.restore("model", noRng.model);
            c.restore("optimizer", noRng.optimizer);
            c.restore("scheduler", noRng.scheduler);
        }
        noRng.epoch();
        assertTrue(differing(straight.parameters(), noRng.parameters()) > 0, "the generator's state made no difference");
    }

    @Test
    void theFileIsSafetensorsWithPrefixedNamesAndAFailedSaveKeepsThePreviousOne() throws Exception {
        Run run = new Run();
        run.epoch();
        Path file = dir.resolve("c.safetensors");
        new Checkpoint().put("model", run.model).put("optimizer", run.optimizer).put("epoch", 1).save(file);
        Map<String, String> metadata = SafeTensors.loadMetadata(file);
        assertEquals("pt", metadata.get("format"));
        assertTrue(metadata.get(Checkpoint.METADATA_KEY).contains("\"epoch\":{\"kind\":\"value\",\"value\":1}"),
                metadata.get(Checkpoint.METADATA_KEY));
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> tensors = SafeTensors.loadFile(file);
            assertTrue(tensors.containsKey("model/0.weight") && tensors.containsKey("optimizer/state.0.momentum_buffer"),
                    tensors.keySet().toString());
        }
        byte[] before = Files.readAllBytes(file);
        // a save that fails (here: a tensor freed before the write) leaves the previous file as it was
        Tensor freed = Tensor.zeros(3);
        freed.close();
        Checkpoint bad = new Checkpoint().put("model", run.model).put("extra", new Checkpoint.Stateful() {
            public Map<String, Tensor> stateTensors() {
                return Map.of("t", freed);
            }

            public Map<String, Object> stateValues() {
                return Map.of();
            }

            public void loadState(Map<String, Tensor> tensors, Map<String, Object> values) {}
        });
        assertThrows(IllegalStateException.class, () -> bad.save(file));
        IllegalArgumentException nan = assertThrows(IllegalArgumentException.class,
                () -> new Checkpoint().put("x", Double.NaN));
        assertTrue(nan.getMessage().contains("only finite numbers"), nan.getMessage());
        assertArrayEquals(before, Files.readAllBytes(file), "the previous checkpoint changed");
    }

    @Test
    void misuseIsRefusedNamingTheKey() {
        Run run = new Run();
        Checkpoint c = new Checkpoint().put("model", run.model);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.put("model", 3));
        assertTrue(e.getMessage().contains("key 'model' was put twice"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> c.put("a/b", 3));
        assertTrue(e.getMessage().contains("without '/'"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> c.put("list", List.of(1)));
        assertTrue(e.getMessage().contains("none of what a checkpoint holds"), e.getMessage());
        Path file = dir.resolve("m.safetensors");
        c.save(file);
        try (var scope = Tensors.scope()) {
            Checkpoint back = Checkpoint.load(file);
            e = assertThrows(IllegalArgumentException.class, () -> back.restore("model", run.optimizer));
            assertTrue(e.getMessage().contains("entry 'model' is a module, not a optimizer")
                    || e.getMessage().contains("entry 'model' is a module, not an optimizer"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> back.getInt("epoch"));
            assertTrue(e.getMessage().contains("has no entry 'epoch'; it has [model]"), e.getMessage());
            assertFalse(back.has("epoch"));
        }
        Path plain = dir.resolve("plain.safetensors");
        SafeTensors.saveFile(run.model.stateDict(), plain);
        e = assertThrows(IllegalArgumentException.class, () -> Checkpoint.load(plain));
        assertTrue(e.getMessage().contains("is not a checkpoint written by Checkpoint.save"), e.getMessage());
    }
}
