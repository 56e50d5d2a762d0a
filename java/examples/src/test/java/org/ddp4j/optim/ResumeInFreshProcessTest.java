package org.ddp4j.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Training N steps, saving, loading in a new JVM and training M more gives, bit for bit, the
 * parameters, BatchNorm buffers and momentum buffers of N + M steps in one go.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ResumeInFreshProcessTest {
    @TempDir
    Path dir;

    /** Runs ResumeTrainer in a child JVM with the test class path (bounded: 120 s). */
    private static void runInNewJvm(String... args) throws Exception {
        List<String> command = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), ResumeTrainer.class.getName()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        var output = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (java.io.IOException e) {
                return "<output lost: " + e + ">";
            }
        });
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("ResumeTrainer " + String.join(" ", args) + " did not finish within 120 s:\n" + output.get(5, TimeUnit.SECONDS));
        }
        assertEquals(0, p.exitValue(), "ResumeTrainer failed:\n" + output.get(30, TimeUnit.SECONDS));
    }

    /** Whether two checkpoint files hold the same names, shapes and bits. */
    private static boolean sameBits(Path a, Path b) {
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> x = SafeTensors.loadFile(a);
            Map<String, Tensor> y = SafeTensors.loadFile(b);
            assertEquals(x.keySet(), y.keySet());
            for (String name : x.keySet()) {
                assertArrayEquals(x.get(name).shape(), y.get(name).shape(), name);
                boolean same = x.get(name).dtype() == DType.FLOAT32
                        ? java.util.Arrays.equals(bits(x.get(name).toFloatArray()), bits(y.get(name).toFloatArray()))
                        : java.util.Arrays.equals(x.get(name).toLongArray(), y.get(name).toLongArray());
                if (!same) {
                    return false;
                }
            }
            return true;
        }
    }

    private static int[] bits(float[] v) {
        int[] out = new int[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = Float.floatToRawIntBits(v[i]);
        }
        return out;
    }

    @Test
    void threeStepsSavedThenTwoInANewJvmEqualFiveInOneGo() throws Exception {
        Path first = dir.resolve("after3.safetensors");
        Path resumed = dir.resolve("resumed5.safetensors");
        Path straight = dir.resolve("straight5.safetensors");
        runInNewJvm("0", "3", first.toString());
        runInNewJvm("3", "5", resumed.toString(), first.toString());
        ResumeTrainer.run(0, 5, straight, null, true);

        assertTrue(sameBits(straight, resumed), "model state after resuming differs from training in one go");
        assertTrue(sameBits(ResumeTrainer.optimizerFile(straight), ResumeTrainer.optimizerFile(resumed)),
                "momentum buffers after resuming differ from training in one go");
        try (var scope = Tensors.scope()) {
            assertEquals(List.of("state.0.momentum_buffer", "state.1.momentum_buffer"),
                    SafeTensors.loadFile(ResumeTrainer.optimizerFile(resumed)).keySet().stream().limit(2).toList());
            assertArrayEquals(new long[] {5},
                    SafeTensors.loadFile(resumed).get("layer1.1.num_batches_tracked").toLongArray());
        }

        // The check has teeth: resuming without the momentum (a fresh optimizer) ends elsewhere.
        Path noMomentum = dir.resolve("no-momentum5.safetensors");
        ResumeTrainer.run(3, 5, noMomentum, first, false);
        assertFalse(sameBits(straight, noMomentum), "resuming without the optimizer state should change the result");
    }
}
