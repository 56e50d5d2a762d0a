package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seed 003's program, MnistDistributed, as a user runs it: {@code java ... MnistDistributed -n 1 -g 2}
 * (two workers spawned from code) and as two nodes ({@code -n 2 -g 1 -nr 0} and {@code -nr 1}).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // backstop above the 240 s bound per process
class MnistDistributedTest {
    private static final Pattern EPOCH_LINE = Pattern.compile("Epoch \\[\\d+/2\\], Step \\[\\d+/4\\], Loss: \\d+\\.\\d{4}");
    private static final Pattern TIME_LINE = Pattern.compile("Training complete in: \\d+:\\d{2}:\\d{2}\\.\\d{6}");

    /** 800 images, 2 ranks of batch 100: 4 steps per epoch, the loss printed every 2 steps. */
    private static final List<String> SMALL_RUN = List.of("--epochs", "2", "--limit", "800", "--test-limit", "200",
            "--log-interval", "2", "--device", "cpu");

    record Run(int exitCode, List<String> lines) {
        String text() {
            return String.join("\n", lines);
        }

        /** The lines with this prefix, the prefix removed. */
        List<String> of(String prefix) {
            return lines.stream().filter(l -> l.startsWith(prefix)).map(l -> l.substring(prefix.length())).toList();
        }
    }

    /** Starts MnistDistributed in a new JVM with MASTER_PORT in its environment. */
    private static Process start(int port, List<String> args) throws IOException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                MnistDistributed.class.getName()));
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().remove("MASTER_ADDR");
        pb.environment().put("MASTER_PORT", Integer.toString(port));
        pb.environment().put("DDP4J_TIMEOUT_SECONDS", "120");
        return pb.start();
    }

    private static Run finish(Process p) throws Exception {
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "<output lost: " + e + ">";
            }
        });
        if (!p.waitFor(240, TimeUnit.SECONDS)) {
            p.destroyForcibly(); // its workers see their pipe close and halt
            throw new AssertionError("MnistDistributed did not finish within 240 s:\n" + out.get(10, TimeUnit.SECONDS));
        }
        return new Run(p.exitValue(), out.get(30, TimeUnit.SECONDS).lines().toList());
    }

    private static List<String> args(String... nodeArgs) {
        List<String> all = new ArrayList<>(List.of(nodeArgs));
        all.addAll(SMALL_RUN);
        return all;
    }

    @Test
    void twoSpawnedWorkersOnOneNodePrintTheSeedsLines() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        Run run = finish(start(LauncherProcess.freePort(), args("-n", "1", "-g", "2", "-nr", "0")));
        assertEquals(0, run.exitCode(), run.text());
        List<String> rank0 = run.of("[rank0]: ");
        List<String> epochLines = rank0.stream().filter(l -> l.startsWith("Epoch")).toList();
        assertEquals(4, epochLines.size(), run.text()); // steps 2 and 4 of 2 epochs
        epochLines.forEach(l -> assertTrue(EPOCH_LINE.matcher(l).matches(), l));
        assertTrue(epochLines.get(0).startsWith("Epoch [1/2], Step [2/4], Loss: "), epochLines.get(0));
        assertTrue(epochLines.get(3).startsWith("Epoch [2/2], Step [4/4], Loss: "), epochLines.get(3));
        assertEquals(1, rank0.stream().filter(l -> TIME_LINE.matcher(l).matches()).count(), run.text());
        assertTrue(rank0.stream().anyMatch(l -> l.startsWith("summary rank=0 world=2 steps=8 ")), run.text());
        assertTrue(run.of("[rank1]: ").stream().anyMatch(l -> l.startsWith("summary rank=1 world=2 steps=8 ")), run.text());
        assertTrue(run.of("[rank1]: ").stream().noneMatch(l -> l.startsWith("Epoch")), "only local rank 0 prints the loss");
        assertTrue(rank0.stream().anyMatch(l -> l.matches("summary test_accuracy=0\\.\\d{4}")), run.text());
    }

    @Test
    void twoNodesOnOneMachineTrainTheSameModelAsOneNodeWithTwoWorkers() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        int port = LauncherProcess.freePort();
        Process node0 = start(port, args("-n", "2", "-g", "1", "-nr", "0"));
        Process node1 = start(port, args("-n", "2", "-g", "1", "--nr", "1"));
        Run run0 = finish(node0);
        Run run1 = finish(node1);
        assertEquals(0, run0.exitCode(), run0.text());
        assertEquals(0, run1.exitCode(), run1.text());
        assertTrue(run0.of("[rank0]: ").stream().anyMatch(l -> l.startsWith("summary rank=0 world=2 steps=8 ")), run0.text());
        List<String> node1Lines = run1.of("[rank1]: ");
        assertTrue(node1Lines.stream().anyMatch(l -> l.startsWith("summary rank=1 world=2 steps=8 ")), run1.text());
        // Each node's local rank 0 prints, as in the seed: node 1's is global rank 1.
        assertEquals(4, node1Lines.stream().filter(l -> EPOCH_LINE.matcher(l).matches()).count(), run1.text());

        // Same ranks, data and seed as -n 1 -g 2: the printed losses must be the same numbers.
        Run oneNode = finish(start(LauncherProcess.freePort(), args("-g", "2")));
        assertEquals(0, oneNode.exitCode(), oneNode.text());
        assertEquals(epochLines(oneNode.of("[rank0]: ")), epochLines(run0.of("[rank0]: ")));
    }

    private static List<String> epochLines(List<String> lines) {
        return lines.stream().filter(l -> l.startsWith("Epoch")).toList();
    }

    @Test
    void aNodeIndexOutsideTheNodesIsRefusedBeforeAnyWorkerStarts() throws Exception {
        Run run = finish(start(LauncherProcess.freePort(), List.of("-n", "2", "-nr", "2")));
        assertEquals(1, run.exitCode(), run.text());
        assertEquals(List.of("MnistDistributed: error: -nr 2 is not a node index for -n 2: use 0 to 1"), run.lines());
    }
}
