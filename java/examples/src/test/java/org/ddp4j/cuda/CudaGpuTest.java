package org.ddp4j.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.Linear;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Tensors, modules and training on a GPU against the CPU. Skipped (and reported as skipped) where
 * no GPU is visible; scripts/gpu-check.sh runs it on a GPU machine. Each kernel is also checked
 * against its CPU twin in native/test/cuda/cuda_kernels_test.cpp.
 */
@Tag("gpu")
class CudaGpuTest {
    private static final Device GPU = Device.cuda(0);

    @BeforeEach
    void needsAGpu() {
        assumeTrue(Cuda.isAvailable(), () -> "GPU test skipped: " + Cuda.unavailableReason());
    }

    @Test
    void tensorsRoundTripThroughTheGpu() {
        try (var scope = Tensors.scope()) {
            float[] values = new Generator(1).normal(1000);
            Tensor onGpu = Tensor.of(values, 10, 100).to(GPU);
            assertEquals(GPU, onGpu.device());
            assertArrayEquals(values, onGpu.toFloatArray());
            assertArrayEquals(values, onGpu.to(Device.CPU).toFloatArray());
            long[] labels = {3, 1, 4, 1, 5};
            assertArrayEquals(labels, Tensor.ofLongs(labels, 5).to(GPU).toLongArray());
            assertEquals("tensor([1.0000, 2.0000], device='cuda:0')", Tensor.of(new float[] {1, 2}, 2).to(GPU).toString());
            Tensor zeros = Tensor.full(2.5, DType.FLOAT32, GPU, 7);
            assertArrayEquals(new float[] {2.5f, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f}, zeros.toFloatArray());
        }
    }

    @Test
    void moduleToMovesParametersInPlace() {
        try (Linear layer = new Linear(4, 3)) {
            Tensor weight = layer.weight();
            float[] before = weight.toFloatArray();
            layer.to(GPU);
            assertSame(weight, layer.weight(), "the parameter object stays (optimisers hold it)");
            assertEquals(GPU, weight.device());
            assertArrayEquals(before, weight.toFloatArray());
            layer.to(Device.CPU);
            assertEquals(Device.CPU, weight.device());
        }
    }

    @Test
    void gradientFlowsBackAcrossTo() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.of(new float[] {1, -2, 3}, 3).requiresGrad(true);
            x.to(GPU).mul(x.to(GPU)).sum().backward();
            assertEquals(Device.CPU, x.grad().device());
            assertArrayEquals(new float[] {2, -4, 6}, x.grad().toFloatArray(), 1e-6f);
        }
    }

    @Test
    void convNetTrainingStepsOnTheGpuMatchTheCpu() {
        try (ConvNet cpu = new ConvNet(10, new Generator(7)); ConvNet gpu = new ConvNet(10, new Generator(7))) {
            gpu.to(GPU);
            List<Float> cpuLosses = train(cpu, Device.CPU, 3);
            List<Float> gpuLosses = train(gpu, GPU, 3);
            for (int i = 0; i < 3; i++) {
                assertEquals(cpuLosses.get(i), gpuLosses.get(i), 1e-4 * Math.abs(cpuLosses.get(i)), "loss " + i);
            }
            Map<String, Tensor> expected = cpu.stateDict();
            gpu.stateDict().forEach((name, t) -> {
                assertEquals(GPU, t.device(), name);
                if (t.dtype() == DType.INT64) {
                    assertArrayEquals(expected.get(name).toLongArray(), t.toLongArray(), name);
                } else {
                    Assertions2.assertClose(expected.get(name), t, 1e-4, 1e-5, name);
                }
            });
        }
    }

    @Test
    void steadyStateStepsMakeNoCudaMalloc() {
        try (ConvNet model = new ConvNet(10, new Generator(3))) {
            model.to(GPU);
            train(model, GPU, 2);
            Cuda.synchronize(GPU);
            long before = Cuda.allocationCount();
            train(model, GPU, 4);
            Cuda.synchronize(GPU);
            assertEquals(before, Cuda.allocationCount(), "cudaMalloc calls in steps 3-6");
        }
    }

    @Test
    void outOfMemoryNamesTheBytesAskedAndFree() {
        OutOfMemoryError e = assertThrows(OutOfMemoryError.class,
                () -> Tensor.full(0, DType.FLOAT32, GPU, 1L << 42)); // 16 TiB
        assertTrue(e.getMessage().contains("tried to allocate"), e.getMessage());
        assertTrue(e.getMessage().contains("free of"), e.getMessage());
    }

    @Test
    void aLabelOutOfRangeIsReportedNotACrash() {
        try (var scope = Tensors.scope()) {
            Tensor logits = Tensor.of(new Generator(2).normal(20), 2, 10).to(GPU);
            Tensor labels = Tensor.ofLongs(new long[] {1, 12}, 2).to(GPU);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new CrossEntropyLoss().forward(logits, labels).item());
            assertTrue(e.getMessage().contains("12"), e.getMessage());
        }
        Cuda.synchronize(GPU); // the error was consumed: the device is usable again
    }

    @Test
    void anOrdinalBeyondTheVisibleGpusNamesLocalRank() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Tensor.full(0, DType.FLOAT32, Device.cuda(Cuda.deviceCount()), 1));
        assertTrue(e.getMessage().contains("LOCAL_RANK"), e.getMessage());
    }

    @Test
    void glooRefusesAGpuTensor() {
        try (ProcessGroupGloo group = new ProcessGroupGloo(new HashStore(), 0, 1, Duration.ofSeconds(30));
                var scope = Tensors.scope()) {
            Tensor t = Tensor.full(1, DType.FLOAT32, GPU, 4);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> group.allReduce(t).await());
            assertTrue(e.getMessage().contains("CPU tensors") && e.getMessage().contains("nccl"), e.getMessage());
        }
    }

    /** Runs SGD-momentum steps on one fixed random batch of 8 images; returns the losses. */
    static List<Float> train(ConvNet model, Device device, int steps) {
        List<Float> losses = new ArrayList<>();
        Generator g = new Generator(11);
        long[] labelValues = new long[8];
        for (int i = 0; i < labelValues.length; i++) {
            labelValues[i] = (i * 7) % 10;
        }
        try (SGD opt = new SGD(model.parameters(), 0.05, 0.9, 0, 0, false); var scope = Tensors.scope()) {
            Tensor images = Tensor.of(g.normal(8 * 28 * 28), 8, 1, 28, 28).to(device);
            Tensor labels = Tensor.ofLongs(labelValues, 8).to(device);
            CrossEntropyLoss ce = new CrossEntropyLoss();
            for (int step = 0; step < steps; step++) {
                try (var stepScope = Tensors.scope()) {
                    Tensor loss = ce.forward(model.forward(images), labels);
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                    losses.add(loss.item());
                }
            }
        }
        return losses;
    }
}
