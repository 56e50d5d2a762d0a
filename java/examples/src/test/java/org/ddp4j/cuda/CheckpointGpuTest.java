package org.ddp4j.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.OptimizerStateDict;
import org.ddp4j.optim.SGD;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A checkpoint of a model and SGD trained on a GPU: saved from the GPU, loaded (CPU tensors from
 * the file) into a fresh GPU model and optimizer, it holds the same values and training continues
 * as before. Skipped where no GPU is visible; scripts/gpu-check.sh runs it on a GPU machine.
 */
@Tag("gpu")
class CheckpointGpuTest {
    private static final Device GPU = Device.cuda(0);

    @TempDir
    Path dir;

    @BeforeEach
    void needsAGpu() {
        assumeTrue(Cuda.isAvailable(), () -> "GPU test skipped: " + Cuda.unavailableReason());
    }

    private static void step(ConvNet net, SGD opt, int seed) {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.of(new Generator(seed).uniform(8 * 784, 0f, 1f), 8, 1, 28, 28).to(GPU);
            Tensor y = Tensor.ofLongs(new long[] {0, 1, 2, 3, 4, 5, 6, 7}, 8).to(GPU);
            Tensor loss = new CrossEntropyLoss().forward(net.forward(x), y);
            opt.zeroGrad();
            loss.backward();
            opt.step();
        }
    }

    @Test
    void aGpuCheckpointRestoresModelAndMomentumOnTheGpu() {
        Path model = dir.resolve("gpu.safetensors");
        Path optim = dir.resolve("gpu.optim.safetensors");
        try (ConvNet a = new ConvNet(10, new Generator(0)); ConvNet b = new ConvNet(10, new Generator(7))) {
            a.to(GPU);
            b.to(GPU);
            try (SGD optA = new SGD(a.parameters(), 0.05, 0.9, 0, 0, false);
                    SGD optB = new SGD(b.parameters(), 0.5, 0, 0, 0, false)) {
                step(a, optA, 1);
                step(a, optA, 2);
                SafeTensors.saveFile(a.stateDict(), model);
                optA.stateDict().save(optim);
                try (var scope = Tensors.scope()) {
                    b.loadStateDict(SafeTensors.loadFile(model));
                    optB.loadStateDict(OptimizerStateDict.load(optim));
                }
                assertEquals(0.9, optB.momentum());
                for (int i = 0; i < a.parameters().size(); i++) {
                    Tensor bufB = optB.momentumBuffer(b.parameters().get(i));
                    assertEquals(GPU, bufB.device(), "momentum buffers live with their parameters");
                    assertArrayEquals(optA.momentumBuffer(a.parameters().get(i)).toFloatArray(), bufB.toFloatArray());
                }
                a.stateDict().forEach((name, t) -> {
                    Tensor u = b.stateDict().get(name);
                    assertEquals(GPU, u.device(), name);
                    if (t.dtype() == DType.FLOAT32) {
                        assertArrayEquals(t.toFloatArray(), u.toFloatArray(), name);
                    } else {
                        assertArrayEquals(t.toLongArray(), u.toLongArray(), name);
                    }
                });
                step(a, optA, 3);
                step(b, optB, 3);
                a.stateDict().forEach((name, t) -> {
                    if (t.dtype() == DType.FLOAT32) {
                        Assertions2.assertClose(t.toFloatArray(), b.stateDict().get(name).toFloatArray(), 1e-5, 1e-6, name);
                    }
                });
            }
        }
    }
}
