package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.ddp4j.data.MnistDataset;
import org.junit.jupiter.api.Test;

/** The demos end to end, as separate processes started by the launcher. */
class DemoTest {
    private static final Pattern SUMMARY = Pattern.compile(
            "summary rank=(\\d+) world=(\\d+) steps=(\\d+) seconds=([\\d.]+) images_per_s=([\\d.]+) loss=([\\d.eE+-]+|NaN)(.*)");

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Runs the launcher in a child JVM and returns its output; fails on a non-zero exit. */
    static List<String> launch(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "org.ddp4j.launch.Launcher"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(240, TimeUnit.SECONDS), "launcher did not finish");
        assertEquals(0, p.exitValue(), "launcher failed:\n" + out);
        return out.lines().toList();
    }

    private static List<Matcher> summaries(List<String> lines) {
        return lines.stream().map(SUMMARY::matcher).filter(Matcher::find).collect(Collectors.toList());
    }

    @Test
    void linearDemoTrainsIdenticalReplicas() throws Exception {
        List<String> out = launch("--nproc-per-node", "2", "--master-port", Integer.toString(freePort()),
                "org.ddp4j.examples.LinearDemo", "--epochs", "3");
        List<Matcher> s = summaries(out);
        assertEquals(2, s.size(), String.join("\n", out));
        for (Matcher m : s) {
            assertEquals("2", m.group(2));
            assertEquals("6", m.group(3)); // 4 samples / 2 ranks, batch 1, 3 epochs
            assertTrue(m.group(7).contains("us_per_step="), m.group(0));
        }
        assertTrue(out.stream().anyMatch(l -> l.contains("| distributed init (rank 1): tcp://127.0.0.1:")));
        // DDP keeps the replicas identical: both ranks print the same trained parameters.
        Map<String, List<String>> trained = out.stream().filter(l -> l.contains("parameters after training:"))
                .collect(Collectors.groupingBy(l -> l.substring(l.indexOf("parameters after training:"))));
        assertEquals(1, trained.size(), String.join("\n", out));
        assertEquals(2, trained.values().iterator().next().size());
    }

    @Test
    void convNetDemoLearnsFashionMnist() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        List<String> out = launch("--nproc-per-node", "2", "--master-port", Integer.toString(freePort()),
                "org.ddp4j.examples.ConvNetDemo", "--limit", "2000", "--epochs", "2");
        List<Matcher> s = summaries(out);
        assertEquals(2, s.size(), String.join("\n", out));
        for (Matcher m : s) {
            assertEquals("20", m.group(3)); // 2000 images / 2 ranks / batch 100, 2 epochs
            double loss = Double.parseDouble(m.group(6));
            assertTrue(loss < 0.6 * Math.log(10), "loss did not fall from ln(10): " + loss);
        }
        Matcher acc = out.stream().map(Pattern.compile("summary test_accuracy=([\\d.]+)")::matcher)
                .filter(Matcher::find).findFirst().orElseThrow();
        assertTrue(Double.parseDouble(acc.group(1)) > 0.6, acc.group(0));
    }
}
