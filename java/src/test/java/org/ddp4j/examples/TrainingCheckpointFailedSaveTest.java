package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A --save that fails or crashes at any point leaves the previous checkpoint resumable, with the
 * model and the optimizer state it was saved with, and the error says so and where it is. Before,
 * a model write that failed after the optimizer's left epoch 2's optimizer beside epoch 1's model,
 * a pair --resume refused.
 */
class TrainingCheckpointFailedSaveTest {
    @TempDir
    Path dir;

    /** One SGD step with momentum on a fixed batch, so that parameters, buffers and momentum all move. */
    private static void step(ConvNet net, SGD opt, int seed) {
        try (var scope = Tensors.scope()) {
            Tensor loss = new CrossEntropyLoss().forward(net.forward(Tensor.of(new Generator(seed).uniform(4 * 784, 0f, 1f),
                    4, 1, 28, 28)), Tensor.ofLongs(new long[] {1, 3, 5, 7}, 4));
            opt.zeroGrad();
            loss.backward();
            opt.step();
        }
    }

    /** The values of a state dict, copied out: float32 as raw bits, int64 as they are. */
    private static Map<String, List<Long>> values(Map<String, Tensor> state) {
        Map<String, List<Long>> out = new LinkedHashMap<>();
        state.forEach((name, t) -> {
            if (t.dtype() == DType.FLOAT32) {
                float[] f = t.toFloatArray();
                List<Long> bits = new java.util.ArrayList<>(f.length);
                for (float v : f) {
                    bits.add((long) Float.floatToRawIntBits(v));
                }
                out.put(name, bits);
            } else {
                out.put(name, java.util.Arrays.stream(t.toLongArray()).boxed().toList());
            }
        });
        return out;
    }

    /** What a resume from {@code file} restores: the epochs done, the model's and the optimizer's values. */
    private record Restored(int epochs, Map<String, List<Long>> model, Map<String, List<Long>> optimizer) {}

    private static Restored resume(Path file) {
        try (ConvNet net = new ConvNet(10, new Generator(99)); SGD opt = new SGD(net.parameters(), 0.05, 0.9, 0, 0, false)) {
            int epochs = TrainingCheckpoint.epochsDone(file);
            TrainingCheckpoint.restore(file, net, opt);
            try (var scope = Tensors.scope()) {
                return new Restored(epochs, values(net.stateDict()), values(opt.stateDict().tensors()));
            }
        }
    }

    private static Restored current(ConvNet net, SGD opt, int epochs) {
        try (var scope = Tensors.scope()) {
            return new Restored(epochs, values(net.stateDict()), values(opt.stateDict().tensors()));
        }
    }

    private static List<String> namesIn(Path folder) throws IOException {
        try (Stream<Path> s = Files.list(folder)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** What a crash at this moment would leave: every file of the folder, as it is now. */
    private static void copyFolder(Path from, Path to) {
        try (Stream<Path> s = Files.list(from)) {
            Files.createDirectories(to);
            for (Path p : s.toList()) {
                Files.copy(p, to.resolve(p.getFileName()));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void aModelWriteFailingAfterTheOptimizersKeepsThePreviousPairResumableAndSaysWhere() throws IOException {
        Path file = dir.resolve("ckpt.safetensors");
        try (ConvNet net = new ConvNet(10, new Generator(0)); SGD opt = new SGD(net.parameters(), 0.05, 0.9, 0, 0, false)) {
            step(net, opt, 1);
            TrainingCheckpoint.save(file, net, opt, 1);
            Restored epoch1 = current(net, opt, 1);
            step(net, opt, 2);
            // the model's data cannot be read while its file is written, as when the disk fills up under it
            net.stateDict().get("fc.bias").close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> TrainingCheckpoint.save(file, net, opt, 2));
            assertTrue(e.getMessage().contains("cannot save the checkpoint of epoch 2 to " + file + ": "), e.getMessage());
            assertTrue(e.getMessage().contains("is closed"), "the cause: " + e.getMessage());
            assertTrue(e.getMessage().contains("the previous checkpoint (epoch 1) is intact: --resume " + file
                    + " restores it (its optimizer state is in " + TrainingCheckpoint.optimizerFile(file) + ")"), e.getMessage());

            assertEquals(epoch1, resume(file));
            assertEquals(List.of("ckpt.optim.safetensors", "ckpt.safetensors"), namesIn(dir), "nothing left behind");
        }
    }

    @Test
    void aFailureOrACrashBeforeAnyStepOfASaveLeavesAResumablePair() throws IOException {
        for (TrainingCheckpoint.SaveStep failing : TrainingCheckpoint.SaveStep.values()) {
            Path folder = Files.createDirectory(dir.resolve(failing.name()));
            Path crashed = dir.resolve(failing.name() + "-crashed");
            Path file = folder.resolve("ckpt.safetensors");
            try (ConvNet net = new ConvNet(10, new Generator(0)); SGD opt = new SGD(net.parameters(), 0.05, 0.9, 0, 0, false)) {
                step(net, opt, 1);
                TrainingCheckpoint.save(file, net, opt, 1);
                Restored epoch1 = current(net, opt, 1);
                step(net, opt, 2);
                Restored epoch2 = current(net, opt, 2);
                assertNotEquals(epoch1.model(), epoch2.model(), "the check has teeth");
                assertNotEquals(epoch1.optimizer(), epoch2.optimizer(), "the check has teeth");

                Runnable save = () -> TrainingCheckpoint.save(file, net, opt, 2, at -> {
                    if (at == failing) {
                        copyFolder(folder, crashed);
                        throw new UncheckedIOException(new IOException("No space left on device (injected)"));
                    }
                });
                boolean committed = failing == TrainingCheckpoint.SaveStep.DROP_PREVIOUS_OPTIMIZER;
                if (committed) {
                    save.run(); // the new pair is complete; failing to remove the kept file is harmless
                } else {
                    UncheckedIOException e = assertThrows(UncheckedIOException.class, save::run, failing.name());
                    Path previousOptimizer = failing.compareTo(TrainingCheckpoint.SaveStep.SWITCH_OPTIMIZER) > 0
                            ? TrainingCheckpoint.previousOptimizerFile(file) : TrainingCheckpoint.optimizerFile(file);
                    assertTrue(e.getMessage().contains("cannot save the checkpoint of epoch 2 to " + file + ": ")
                            && e.getMessage().contains("No space left on device (injected)")
                            && e.getMessage().contains("the previous checkpoint (epoch 1) is intact: --resume " + file
                                    + " restores it (its optimizer state is in " + previousOptimizer + ")"),
                            failing + ": " + e.getMessage());
                }
                Restored expected = committed ? epoch2 : epoch1;
                assertEquals(expected, resume(file), "after a failure before " + failing);
                assertEquals(expected, resume(crashed.resolve("ckpt.safetensors")), "after a crash before " + failing);
                assertTrue(namesIn(folder).stream().noneMatch(n -> n.startsWith(".")), failing + ": " + namesIn(folder));

                // and the next save, from either state, completes and resumes
                TrainingCheckpoint.save(file, net, opt, 2);
                TrainingCheckpoint.save(crashed.resolve("ckpt.safetensors"), net, opt, 2);
                assertEquals(epoch2, resume(file));
                assertEquals(epoch2, resume(crashed.resolve("ckpt.safetensors")));
                assertEquals(List.of("ckpt.optim.safetensors", "ckpt.safetensors"), namesIn(folder));
            }
        }
    }

    @Test
    void filesOfTwoSavesOfTheSameEpochDoNotPair() throws IOException {
        Path a = dir.resolve("a.safetensors");
        Path b = dir.resolve("b.safetensors");
        try (ConvNet net = new ConvNet(10, new Generator(0)); SGD opt = new SGD(net.parameters(), 0.05, 0.9, 0, 0, false)) {
            step(net, opt, 1);
            TrainingCheckpoint.save(a, net, opt, 1);
            step(net, opt, 2);
            TrainingCheckpoint.save(b, net, opt, 1); // another run's epoch 1
        }
        Files.copy(TrainingCheckpoint.optimizerFile(b), TrainingCheckpoint.optimizerFile(a),
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TrainingCheckpoint.epochsDone(a));
        assertEquals(a + " (epoch 1) and " + TrainingCheckpoint.optimizerFile(a) + " (epoch 1) are from different saves"
                + " (files copied from different runs?), and no " + TrainingCheckpoint.previousOptimizerFile(a)
                + " belongs to " + a + " either: resume from a matching pair", e.getMessage());
    }

    @Test
    void aPairWrittenBeforeSaveIdsStillResumesByEpoch() throws IOException {
        Path file = dir.resolve("old.safetensors");
        try (ConvNet net = new ConvNet(10, new Generator(0)); SGD opt = new SGD(net.parameters(), 0.05, 0.9, 0, 0, false)) {
            step(net, opt, 1);
            // what TrainingCheckpoint.save wrote before it drew ids
            var state = opt.stateDict();
            Map<String, String> optimMetadata = new LinkedHashMap<>(state.metadata());
            optimMetadata.put("epoch", "3");
            SafeTensors.saveFile(state.tensors(), TrainingCheckpoint.optimizerFile(file), optimMetadata);
            SafeTensors.saveFile(net.stateDict(), file, Map.of("format", "pt", "epoch", "3"));
            assertEquals(current(net, opt, 3), resume(file));
        }
    }
}
