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
 * second give bit-identical parameters, buffers and momentum; the files carry PyTorch's names
 * (no module. prefix) and the epoch.
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
    void oneEpochSavedAndResumedEqualsTwoEpochsInOneGo() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        Path straight = dir.resolve("straight.safetensors");
        Path half = dir.resolve("half.safetensors");
        Path resumed = dir.resolve("resumed.safetensors");
        demo("--epochs", "2", "--save", straight.toString());
        demo("--epochs", "1", "--save", half.toString());
        List<String> out = demo("--epochs", "2", "--resume", half.toString(), "--save", resumed.toString());
        assertTrue(out.stream().anyMatch(l -> l.contains("Resumed from " + half + " after epoch 1")), String.join("\n", out));

        assertSameBits(straight, resumed);
        assertSameBits(TrainingCheckpoint.optimizerFile(straight), TrainingCheckpoint.optimizerFile(resumed));
        assertEquals(dir.resolve("resumed.optim.safetensors"), TrainingCheckpoint.optimizerFile(resumed));

        Map<String, String> metadata = SafeTensors.loadMetadata(resumed);
        assertEquals(Map.of("format", "pt", "epoch", "2", "checkpoint", metadata.get("checkpoint")), metadata);
        assertEquals(metadata.get("checkpoint"), SafeTensors.loadMetadata(TrainingCheckpoint.optimizerFile(resumed))
                .get("checkpoint"), "one save's two files carry one id");
        assertEquals("1", SafeTensors.loadMetadata(TrainingCheckpoint.optimizerFile(half)).get("epoch"));
        try (var scope = Tensors.scope()) {
            List<String> names = List.copyOf(SafeTensors.loadFile(resumed).keySet());
            assertEquals(List.of("layer1.0.weight", "layer1.0.bias", "layer1.1.weight", "layer1.1.bias",
                    "layer1.1.running_mean", "layer1.1.running_var", "layer1.1.num_batches_tracked"), names.subList(0, 7));
            assertTrue(names.stream().noneMatch(n -> n.startsWith(StateDicts.DATA_PARALLEL_PREFIX)), names.toString());
            // 600 images, 2 ranks, 50 per step: 6 steps per epoch
            assertArrayEquals(new long[] {12}, SafeTensors.loadFile(resumed).get("layer2.1.num_batches_tracked").toLongArray());
        }
        // the check has teeth: after 1 epoch the state is elsewhere
        AssertionError differs = org.junit.jupiter.api.Assertions.assertThrows(AssertionError.class,
                () -> assertSameBits(straight, half));
        assertTrue(differs.getMessage().contains("differs after resuming"), differs.getMessage());
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
            TrainingCheckpoint.save(done, net, opt, 2);
        }
        text = demoErrorInProcess("--limit", "100", "--device", "cpu", "--epochs", "2", "--resume", done.toString());
        assertTrue(text.contains(done + " was saved after epoch 2 and --epochs is 2, so there is nothing left to train:"
                + " raise --epochs (the total, counting the epochs done)"), text);

        // a pair torn by a crash between the two writes
        try (var net = new ConvNet(10, new org.ddp4j.tensor.Generator(0));
                var opt = new org.ddp4j.optim.SGD(net.parameters(), 0.05, 0.9, 0, 0, false)) {
            TrainingCheckpoint.save(dir.resolve("other.safetensors"), net, opt, 3);
        }
        Files.copy(dir.resolve("other.optim.safetensors"), TrainingCheckpoint.optimizerFile(done),
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        text = demoErrorInProcess("--limit", "100", "--device", "cpu", "--epochs", "5", "--resume", done.toString());
        assertTrue(text.contains(done + " (epoch 2) and " + TrainingCheckpoint.optimizerFile(done)
                + " (epoch 3) are from different epochs"), text);
    }
}
