package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.algorithms.ddpcommhooks.CommHookState;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A --save that fails leaves the previous checkpoint resumable, with what it was saved with, and
 * the error says so, with its epoch and the --resume that restores it: a failure while the new
 * state is gathered, and a disk that fills while the file is written (a tiny tmpfs).
 */
class TrainingCheckpointFailedSaveTest {
    @TempDir
    Path dir;

    private static void step(ConvNet net, SGD opt, int seed) {
        try (var scope = Tensors.scope()) {
            Tensor loss = new CrossEntropyLoss().forward(net.forward(Tensor.of(new Generator(seed).uniform(4 * 784, 0f, 1f),
                    4, 1, 28, 28)), Tensor.ofLongs(new long[] {1, 3, 5, 7}, 4));
            opt.zeroGrad();
            loss.backward();
            opt.step();
        }
    }

    private static float[] firstWeight(Path file) {
        try (var scope = Tensors.scope(); ConvNet net = new ConvNet(10, new Generator(99));
                SGD opt = new SGD(net.parameters(), 0.05, 0.9, 0, 0, false)) {
            var c = TrainingCheckpoint.read(file);
            TrainingCheckpoint.restore(file, c, new TrainingCheckpoint.Run(net, opt, null, new Generator(0), null));
            assertEquals(1, TrainingCheckpoint.epochsDone(c));
            return net.namedParameters().get("layer1.0.weight").toFloatArray();
        }
    }

    /** A hook state whose stateDict fails as a full disk would. */
    private static CommHookState failing() {
        return new CommHookState() {
            public Map<String, Tensor> stateDict() {
                throw new UncheckedIOException(new java.io.IOException("No space left on device"));
            }

            public void loadStateDict(Map<String, Tensor> state) {}
        };
    }

    private void checkFailedSaveKeepsEpochOne(Path file, boolean fillDisk) throws Exception {
        try (ConvNet net = new ConvNet(10, new Generator(0)); SGD opt = new SGD(net.parameters(), 0.05, 0.9, 0, 0, false)) {
            step(net, opt, 1);
            TrainingCheckpoint.save(file, new TrainingCheckpoint.Run(net, opt, null, new Generator(0), null), 1);
            float[] saved = firstWeight(file);
            step(net, opt, 2);
            RuntimeException e;
            if (fillDisk) {
                // a file that takes what is left of the disk, so the new checkpoint cannot be written in full
                Path filler = file.resolveSibling("filler");
                try (var out = Files.newOutputStream(filler)) {
                    byte[] block = new byte[4096];
                    try {
                        while (true) {
                            out.write(block);
                        }
                    } catch (java.io.IOException full) {
                        // the disk is full
                    }
                }
                e = assertThrows(UncheckedIOException.class, () -> TrainingCheckpoint.save(file,
                        new TrainingCheckpoint.Run(net, opt, null, new Generator(0), null), 2));
            } else {
                e = assertThrows(UncheckedIOException.class, () -> TrainingCheckpoint.save(file,
                        new TrainingCheckpoint.Run(net, opt, null, new Generator(0), failing()), 2));
            }
            assertTrue(e.getMessage().startsWith("cannot save the checkpoint of epoch 2 to " + file + ": "), e.getMessage());
            assertTrue(e.getMessage().endsWith("the previous checkpoint (epoch 1) is intact: --resume " + file
                    + " restores it"), e.getMessage());
            assertArrayEquals(saved, firstWeight(file), "the previous checkpoint changed");
            try (var files = Files.list(file.getParent())) {
                List<String> names = files.map(p -> p.getFileName().toString()).filter(n -> !n.equals("filler")).toList();
                assertEquals(List.of(file.getFileName().toString()), names, "a temporary file was left behind");
            }
        }
    }

    @Test
    void aSaveThatFailsWhileGatheringKeepsThePreviousCheckpoint() throws Exception {
        checkFailedSaveKeepsEpochOne(dir.resolve("ckpt.safetensors"), false);
    }

    @Test
    void aDiskThatFillsDuringTheSaveKeepsThePreviousCheckpoint() throws Exception {
        Path mount = Files.createDirectories(dir.resolve("small"));
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mount.toString())
                .redirectErrorStream(true).start();
        boolean mounted = p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        assumeTrue(mounted, "cannot mount a small tmpfs here (needs root): " + new String(p.getInputStream().readAllBytes()));
        try {
            checkFailedSaveKeepsEpochOne(mount.resolve("ckpt.safetensors"), true);
        } finally {
            new ProcessBuilder("umount", "-l", mount.toString()).start().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
