package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.nn.StateDicts;
import org.ddp4j.serialization.Checkpoint;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * ConvNetDemo --save / --resume on 2 ranks: 2 epochs in one go and 1 epoch, save, resume for the
 * second give bit-identical parameters, buffers, momentum and Dropout generator; the file carries
 * PyTorch's names (no module. prefix) under model/ and the epoch.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS) // backstop above LauncherProcess's 240 s bound per run
class ConvNetDemoResumeTest {
    @TempDir
    Path dir;

    private static List<String> demo(String... demoArgs) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of("--nproc-per-node", "2", "--master-port",
                Integer.toString(LauncherProcess.freePort()), "org.ddp4j.examples.ConvNetDemo", "--limit", "600",
                "--batch-size", "50", "--test-limit", "100", "--device", "cpu"));
        args.addAll(List.of(demoArgs));
        LauncherProcess.Result r = LauncherProcess.run(args.toArray(String[]::new));
        assertEquals(0, r.exitCode(), "launcher failed:\n" + r.text());
        return r.lines();
    }

    private static void assertSameBits(Path expected, Path actual) {
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> x = SafeTensors.loadFile(expected);
            Map<String, Tensor> y = SafeTensors.loadFile(actual);
            assertEquals(List.copyOf(x.keySet()), List.copyOf(y.keySet()));
            x.forEach((name, t) -> {
                if (t.dtype() == DType.FLOAT32) {
                    float[] a = t.toFloatArray();
                    float[] b = y.get(name).toFloatArray();
                    for (int i = 0; i < a.length; i++) {
                        assertEquals(Float.floatToRawIntBits(a[i]), Float.floatToRawIntBits(b[i]),
                                name + "[" + i + "] differs after resuming: " + a[i] + " vs " + b[i]);
                    }
                } else {
                    assertArrayEquals(t.toLongArray(), y.get(name).toLongArray(), name);
                }
            });
        }
    }

    @Test
    void oneEpochSavedAndResumedEqualsTwoEpochsInOneGoWithDropout() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        Path straight = dir.resolve("straight.safetensors");
        Path half = dir.resolve("half.safetensors");
        Path resumed = dir.resolve("resumed.safetensors");
        // Dropout and a per-epoch schedule: the generator's and the schedule's state must come back too
        String[] common = {"--dropout", "0.2", "--scheduler", "step"};
        demo(concat(common, "--epochs", "2", "--save", straight.toString()));
        demo(concat(common, "--epochs", "1", "--save", half.toString()));
        List<String> out = demo(concat(common, "--epochs", "2", "--resume", half.toString(), "--save", resumed.toString()));
        assertTrue(out.stream().anyMatch(l -> l.contains("Resumed from " + half + " after epoch 1")), String.join("\n", out));

        assertSameBits(straight, resumed); // model, optimizer and hook tensors: every tensor of the file
        try (var scope = Tensors.scope()) {
            Checkpoint a = Checkpoint.load(straight);
            Checkpoint b = Checkpoint.load(resumed);
            assertEquals(2, b.getInt(TrainingCheckpoint.EPOCH));
            assertEquals(List.of("model", "optimizer", "scheduler", "epoch", "rng"), List.copyOf(b.keys()));
            org.ddp4j.tensor.Generator ga = new org.ddp4j.tensor.Generator(0);
            org.ddp4j.tensor.Generator gb = new org.ddp4j.tensor.Generator(1);
            a.restore(TrainingCheckpoint.RNG, ga);
            b.restore(TrainingCheckpoint.RNG, gb);
            assertArrayEquals(ga.getState(), gb.getState(), "the Dropout generator went on where it stopped");
            List<String> names = List.copyOf(SafeTensors.loadFile(resumed).keySet());
            assertEquals(List.of("model/layer1.0.weight", "model/layer1.0.bias", "model/layer1.1.weight",
                    "model/layer1.1.bias", "model/layer1.1.running_mean", "model/layer1.1.running_var",
                    "model/layer1.1.num_batches_tracked"), names.subList(0, 7));
            assertTrue(names.stream().noneMatch(n -> n.startsWith("model/" + StateDicts.DATA_PARALLEL_PREFIX)), names.toString());
            // 600 images, 2 ranks, 50 per step: 6 steps per epoch
            assertArrayEquals(new long[] {12}, SafeTensors.loadFile(resumed).get("model/layer2.1.num_batches_tracked")
                    .toLongArray());
        }
        // the check has teeth: after 1 epoch the state is elsewhere
        AssertionError differs = org.junit.jupiter.api.Assertions.assertThrows(AssertionError.class,
                () -> assertSameBits(straight, half));
        assertTrue(differs.getMessage().contains("differs after resuming"), differs.getMessage());
    }

    private static String[] concat(String[] a, String... b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** Runs the demo in this JVM (its checks come before any rendezvous) and returns what it printed to stderr. */
    private static String demoErrorInProcess(String... args) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream original = System.err;
        int exit;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            exit = DemoCommandLine.execute(new ConvNetDemo(), args);
        } finally {
            System.setErr(original);
        }
        String text = err.toString(StandardCharsets.UTF_8);
        assertEquals(1, exit, text);
        return text;
    }

    @Test
    void resumingFromAMissingOrFinishedCheckpointFailsBeforeTheRendezvous() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        Path missing = dir.resolve("missing.safetensors");
        String text = demoErrorInProcess("--limit", "100", "--device", "cpu", "--resume", missing.toString());
        assertTrue(text.contains("ConvNetDemo: error: ") && text.contains(missing + ": no such file"), text);

        Path done = dir.resolve("done.safetensors");
        try (var net = new ConvNet(10, new org.ddp4j.tensor.Generator(0));
                var opt = new org.ddp4j.optim.SGD(net.parameters(), 0.05, 0.9, 0, 0, false)) {
            TrainingCheckpoint.save(done, new TrainingCheckpoint.Run(net, opt, null, new org.ddp4j.tensor.Generator(0),
                    null), 2);
        }
        text = demoErrorInProcess("--limit", "100", "--device", "cpu", "--epochs", "2", "--resume", done.toString());
        assertTrue(text.contains(done + " was saved after epoch 2 and --epochs is 2, so there is nothing left to train:"
                + " raise --epochs (the total, counting the epochs done)"), text);

        // a bare state dict is not a checkpoint
        Path bare = dir.resolve("bare.safetensors");
        try (var net = new ConvNet(10, new org.ddp4j.tensor.Generator(0))) {
            SafeTensors.saveFile(net.stateDict(), bare);
        }
        text = demoErrorInProcess("--limit", "100", "--device", "cpu", "--epochs", "5", "--resume", bare.toString());
        assertTrue(text.contains(bare + " is not a checkpoint written by Checkpoint.save"), text);
    }
}
