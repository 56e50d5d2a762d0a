package org.ddp4j.examples;

import static org.ddp4j.examples.LearningBounds.LEARNED_ACCURACY;
import static org.ddp4j.examples.LearningBounds.LEARNED_LOSS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The demos end to end, as separate processes started by the launcher. */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // backstop above LauncherProcess's 240 s bound
class DemoTest {
    private static final Pattern SUMMARY = Pattern.compile(
            "summary rank=(\\d+) world=(\\d+) steps=(\\d+) seconds=([\\d.]+) images_per_s=([\\d.]+) loss=([\\d.eE+-]+|NaN)(.*)");

    /** Runs the launcher in a child JVM and returns its output; fails on a non-zero exit. */
    static List<String> launch(String... args) throws Exception {
        LauncherProcess.Result r = LauncherProcess.run(args);
        assertEquals(0, r.exitCode(), "launcher failed:\n" + r.text());
        return r.lines();
    }

    private static List<Matcher> summaries(List<String> lines) {
        return lines.stream().map(SUMMARY::matcher).filter(Matcher::find).collect(Collectors.toList());
    }

    @Test
    void linearDemoTrainsIdenticalReplicas() throws Exception {
        List<String> out = launch("--nproc-per-node", "2", "--master-port", Integer.toString(LauncherProcess.freePort()),
                "org.ddp4j.examples.LinearDemo", "--epochs", "3", "--device", "cpu");
        List<Matcher> s = summaries(out);
        assertEquals(2, s.size(), String.join("\n", out));
        for (Matcher m : s) {
            assertEquals("2", m.group(2));
            assertEquals("6", m.group(3)); // 4 samples / 2 ranks, batch 1, 3 epochs
            assertTrue(m.group(7).contains("us_per_step="), m.group(0));
        }
        assertTrue(out.stream().anyMatch(l -> l.contains("| distributed init (rank 1): tcp://127.0.0.1:")));
        // DDP keeps the replicas identical: both ranks print the same trained parameters.
        assertEquals(trainedParameters(out, 0), trainedParameters(out, 1));
        assertTrue(trainedParameters(out, 0).contains("module.weight=tensor([["), trainedParameters(out, 0));
    }

    /** The (multi-line) text a rank printed from "parameters after training:" up to its summary line. */
    private static String trainedParameters(List<String> out, int rank) {
        String prefix = "[rank" + rank + "]: ";
        StringBuilder text = new StringBuilder();
        boolean inside = false;
        for (String line : out) {
            if (!line.startsWith(prefix)) {
                continue;
            }
            String body = line.substring(prefix.length());
            if (body.startsWith("parameters after training:")) {
                inside = true;
            } else if (body.startsWith("summary")) {
                inside = false;
            }
            if (inside) {
                text.append(body).append('\n');
            }
        }
        return text.toString();
    }

    @Test
    void convNetDemoLearnsFashionMnist() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        List<String> out = launch("--nproc-per-node", "2", "--master-port", Integer.toString(LauncherProcess.freePort()),
                "org.ddp4j.examples.ConvNetDemo", "--limit", "2000", "--epochs", "2", "--device", "cpu");
        List<Matcher> s = summaries(out);
        assertEquals(2, s.size(), String.join("\n", out));
        for (Matcher m : s) {
            assertEquals("20", m.group(3)); // 2000 images / 2 ranks / batch 100, 2 epochs
            double loss = Double.parseDouble(m.group(6));
            assertTrue(loss < LEARNED_LOSS, "loss did not fall from ln(10): " + loss);
        }
        // DDP keeps the ranks in step: both end with the same parameters, to the bit
        assertTrue(s.get(0).group(7).matches(" parameters_crc32=\\p{XDigit}{8}.*"), s.get(0).group(0));
        assertEquals(s.get(0).group(7), s.get(1).group(7), "the ranks ended with different parameters");
        Matcher acc = out.stream().map(Pattern.compile("summary test_accuracy=([\\d.]+)")::matcher)
                .filter(Matcher::find).findFirst().orElseThrow();
        assertTrue(Double.parseDouble(acc.group(1)) > LEARNED_ACCURACY, acc.group(0));
    }

    @Test
    void convNetDemoAccumulatesGradientsAndPrintsTheModel() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        List<String> out = launch("--nproc-per-node", "2", "--master-port", Integer.toString(LauncherProcess.freePort()),
                "org.ddp4j.examples.ConvNetDemo", "--limit", "2000", "--epochs", "2", "--batch-size", "50",
                "--accumulate", "2", "--print-model", "--workers", "2", "--device", "cpu");
        String text = String.join("\n", out);
        assertTrue(text.contains("[rank0]: DistributedDataParallel(\n[rank0]:   (module): ConvNet(\n"), text);
        assertTrue(text.contains("(fc): Linear(in_features=1568, out_features=10, bias=True)"), text);
        assertEquals(1, out.stream().filter(l -> l.contains("DistributedDataParallel(")).count(), "printed once, by rank 0");
        List<Matcher> s = summaries(out);
        assertEquals(2, s.size(), text);
        for (Matcher m : s) {
            assertEquals("40", m.group(3)); // micro-batches: 2000 images / 2 ranks / 50, 2 epochs (20 optimizer steps)
            double loss = Double.parseDouble(m.group(6));
            assertTrue(loss < LEARNED_LOSS, "loss did not fall from ln(10): " + loss);
        }
    }

    @Test
    void convNetDemoTrainsUnderFp16AutocastSyncBatchNormAndPowerSgdAndResumes(@org.junit.jupiter.api.io.TempDir
            java.nio.file.Path dir) throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        java.nio.file.Path ckpt = dir.resolve("amp.safetensors");
        String[] flags = {"org.ddp4j.examples.ConvNetDemo", "--limit", "2000", "--autocast", "fp16", "--sync-bn",
                "--comm-hook", "powersgd:2", "--device", "cpu", "--save", ckpt.toString()};
        List<String> out = launch(concat(new String[] {"--nproc-per-node", "2", "--master-port",
                Integer.toString(LauncherProcess.freePort())}, flags, "--epochs", "2", "--print-model"));
        String text = String.join("\n", out);
        assertTrue(text.contains("(1): SyncBatchNorm(16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"),
                text);
        List<Matcher> s = summaries(out);
        assertEquals(2, s.size(), text);
        for (Matcher m : s) {
            double loss = Double.parseDouble(m.group(6));
            assertTrue(loss < LEARNED_LOSS, "loss did not fall from ln(10): " + loss);
        }
        try (var scope = org.ddp4j.tensor.Tensors.scope()) {
            var c = org.ddp4j.serialization.Checkpoint.load(ckpt);
            assertTrue(c.has("grad_scaler") && c.has("comm_hook"), c.keys().toString());
        }
        // a third epoch from the checkpoint, with the same flags
        out = launch(concat(new String[] {"--nproc-per-node", "2", "--master-port",
                Integer.toString(LauncherProcess.freePort())}, flags, "--epochs", "3", "--resume", ckpt.toString()));
        text = String.join("\n", out);
        assertTrue(text.contains("Resumed from " + ckpt + " after epoch 2"), text);
        assertEquals(2, summaries(out).size(), text);
    }

    private static String[] concat(String[] a, String[] b, String... c) {
        return java.util.stream.Stream.of(a, b, c).flatMap(java.util.Arrays::stream).toArray(String[]::new);
    }
}
