package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.Module;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.tensor.Threads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ResNetSynthetic in one process (no WORLD_SIZE, so no group and no DDP): {@code --weights} starts
 * from the file's parameters, {@code --input} trains on the file's batch, {@code --threads} 1, 2
 * and 3 end with the same check line (loss, sum and CRC), and bad files are refused with the reason.
 */
class ResNetSyntheticFilesTest {
    private static final Pattern CHECK = Pattern.compile("check rank=0 loss=(\\S+) param_sum=(\\S+) param_crc=([0-9a-f]{8})");

    @TempDir
    Path dir;

    /** Runs the command in this JVM and returns its check line's matcher. */
    private static Matcher run(String... args) {
        ResNetSynthetic command = new ResNetSynthetic();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        command.out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        assertEquals(0, DemoCommandLine.execute(command, args), bytes.toString(StandardCharsets.UTF_8));
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("summary rank=0 world=1 model=resnet18 batch=2 image=32 "), text);
        Matcher m = CHECK.matcher(text);
        assertTrue(m.find(), text);
        return m;
    }

    @Test
    void weightsAndInputFilesAreWhatItTrainsFromAndOn() {
        Path weights = dir.resolve("weights.safetensors");
        Path input = dir.resolve("input.safetensors");
        try (var scope = Tensors.scope()) {
            Module model = ResNetSynthetic.createModel("resnet18", 7); // not the run's seed 0
            SafeTensors.saveFile(model.stateDict(), weights);
            ResNetSynthetic.Batch batch = ResNetSynthetic.syntheticBatch(new Generator(3), 2, 32);
            Map<String, Tensor> file = new LinkedHashMap<>();
            file.put("input", batch.input());
            file.put("target", batch.target());
            SafeTensors.saveFile(file, input);

            // no step: the parameters are the file's
            Matcher untrained = run("--model", "resnet18", "--batch-size", "2", "--image-size", "32", "--warmup-steps", "0",
                    "--steps", "0", "--weights", weights.toString());
            assertEquals(String.format("%08x", ResNetSynthetic.parameterCrc(model.parameters())), untrained.group(3));
            assertEquals("nan", untrained.group(1));

            // one step: its loss is the file's model on the file's batch
            model.train();
            float expected = new CrossEntropyLoss().forward(model.forward(batch.input()), batch.target()).item();
            Matcher trained = run("--model", "resnet18", "--batch-size", "2", "--image-size", "32", "--warmup-steps", "1",
                    "--steps", "0", "--weights", weights.toString(), "--input", input.toString());
            assertEquals(expected, Float.parseFloat(trained.group(1)), 1e-6);
            assertTrue(!trained.group(3).equals(untrained.group(3)), "the step changed no parameter");
        }
    }

    @Test
    void threadCountsTrainToTheSameBits() {
        int before = Threads.getNumThreads();
        try {
            String[] crc = new String[3];
            for (int t = 1; t <= 3; t++) {
                crc[t - 1] = run("--model", "resnet18", "--batch-size", "2", "--image-size", "32", "--warmup-steps", "0",
                        "--steps", "2", "--threads", Integer.toString(t)).group(0);
            }
            assertEquals(crc[0], crc[1], "1 and 2 threads");
            assertEquals(crc[0], crc[2], "1 and 3 threads");
        } finally {
            Threads.setNumThreads(before); // the setting is process-wide
        }
    }

    @Test
    void inputOfAnotherShapeIsRefusedNamingTheOptions() {
        Path input = dir.resolve("input.safetensors");
        try (var scope = Tensors.scope()) {
            ResNetSynthetic.Batch batch = ResNetSynthetic.syntheticBatch(new Generator(3), 2, 32);
            SafeTensors.saveFile(Map.of("input", batch.input(), "target", batch.target()), input);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> ResNetSynthetic.readInput(input, 4, 32));
            assertTrue(e.getMessage().contains("float32[2, 3, 32, 32]") && e.getMessage().contains("--batch-size 4")
                    && e.getMessage().contains("pass the file's batch size"), e.getMessage());
            // One channel: no option fixes that, so the message says what the file must hold.
            SafeTensors.saveFile(Map.of("input", Tensor.zeros(2, 1, 32, 32), "target", batch.target()), input);
            e = assertThrows(IllegalArgumentException.class, () -> ResNetSynthetic.readInput(input, 2, 32));
            assertTrue(e.getMessage().contains("float32[2, 1, 32, 32]") && e.getMessage().contains("3 colour channels")
                    && !e.getMessage().contains("pass the file's"), e.getMessage());
            SafeTensors.saveFile(Map.of("x", batch.input()), input);
            e = assertThrows(IllegalArgumentException.class, () -> ResNetSynthetic.readInput(input, 2, 32));
            assertTrue(e.getMessage().contains("'input'"), e.getMessage());
        }
    }
}
