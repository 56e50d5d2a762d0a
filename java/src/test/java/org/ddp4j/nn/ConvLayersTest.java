package org.ddp4j.nn;

import org.ddp4j.testing.LiveBytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.ddp4j.nn.functional.BatchNorm2dFunction;
import org.ddp4j.nn.functional.Conv2dFunction;
import org.ddp4j.nn.functional.MaxPool2dFunction;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.vision.models.ResNet;
import org.junit.jupiter.api.Test;

/** Module structure, initialisation, the Fashion-MNIST stack's shapes, and error messages. */
class ConvLayersTest {

    @Test
    void conv2dParametersAndDefaultInit() {
        try (Conv2d conv = new Conv2d(16, 32, 5, 1, 2, true, new Generator(7))) {
            assertEquals(List.of("weight", "bias"), List.copyOf(conv.namedParameters().keySet()));
            assertArrayEquals(new long[] {32, 16, 5, 5}, conv.weight().shape());
            assertArrayEquals(new long[] {32}, conv.bias().shape());
            // kaiming_uniform(a = sqrt 5) and the bias both give bound 1/sqrt(fan_in), fan_in = 16 * 5 * 5.
            double bound = 1 / Math.sqrt(16 * 25);
            for (Tensor p : conv.parameters()) {
                float max = 0;
                for (float f : p.toFloatArray()) {
                    max = Math.max(max, Math.abs(f));
                }
                assertTrue(max <= bound && max > 0.9 * bound, "max |value| " + max + " vs bound " + bound);
                assertTrue(p.requiresGrad());
            }
            try (Conv2d same = new Conv2d(16, 32, 5, 1, 2, true, new Generator(7))) {
                assertArrayEquals(conv.weight().toFloatArray(), same.weight().toFloatArray());
            }
        }
        try (Conv2d noBias = new Conv2d(1, 2, 3, 1, 0, false)) {
            assertNull(noBias.bias());
            assertEquals(List.of("weight"), List.copyOf(noBias.namedParameters().keySet()));
            assertEquals("Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), bias=False)", noBias.toString());
        }
        assertThrows(IllegalArgumentException.class, () -> new Conv2d(0, 2, 3));
    }

    @Test
    void batchNorm2dStateAndModes() {
        try (var scope = Tensors.scope(); BatchNorm2d bn = new BatchNorm2d(3)) {
            assertEquals(List.of("weight", "bias"), List.copyOf(bn.namedParameters().keySet()));
            assertEquals(List.of("running_mean", "running_var", "num_batches_tracked"),
                    List.copyOf(bn.namedBuffers().keySet()));
            Tensor tracked = bn.namedBuffers().get("num_batches_tracked");
            assertEquals(DType.INT64, tracked.dtype());
            assertEquals(0, tracked.dim());
            assertArrayEquals(new float[] {1, 1, 1}, bn.weight().toFloatArray());
            assertArrayEquals(new float[] {0, 0, 0}, bn.bias().toFloatArray());

            Tensor x = Tensor.of(new Generator(1).normal(2 * 3 * 4 * 4), 2, 3, 4, 4);
            bn.forward(x);
            bn.forward(x);
            assertEquals(2, bn.numBatchesTracked());
            float[] mean = bn.runningMean().toFloatArray();
            bn.eval();
            Tensor y = bn.forward(x);
            assertEquals(2, bn.numBatchesTracked(), "eval does not count batches");
            assertArrayEquals(mean, bn.runningMean().toFloatArray(), "eval leaves running stats alone");
            assertArrayEquals(x.shape(), y.shape());
        }
    }

    @Test
    void fashionMnistStackShapesAndBackward() {
        Generator g = new Generator(3);
        try (var scope = Tensors.scope();
                Sequential net = new Sequential(
                        new Conv2d(1, 16, 5, 1, 2, true, g), new BatchNorm2d(16), new MaxPool2d(2),
                        new Conv2d(16, 32, 5, 1, 2, true, g), new BatchNorm2d(32), new MaxPool2d(2))) {
            Tensor x = Tensor.of(g.normal(4 * 28 * 28), 4, 1, 28, 28);
            Tensor y = net.forward(x);
            assertArrayEquals(new long[] {4, 32, 7, 7}, y.shape());
            y.sum().backward();
            for (var e : net.namedParameters().entrySet()) {
                assertNotNull(e.getValue().grad(), e.getKey());
            }
            assertEquals(List.of("0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias", "4.weight", "4.bias"),
                    List.copyOf(net.namedParameters().keySet()));
        }
    }

    @Test
    void stepsInAScopeLeaveNoNativeMemoryBehind() {
        Generator g = new Generator(4);
        try (Sequential net = new Sequential(new Conv2d(1, 4, 3, 1, 1, true, g), new BatchNorm2d(4),
                new MaxPool2d(3, 2, 1), new Conv2d(4, 2, 3, 2, 0, false, g), new BatchNorm2d(2))) {
            long[] after = new long[3];
            for (int step = 0; step < 3; step++) {
                try (var scope = Tensors.scope()) {
                    Tensor x = Tensor.of(g.normal(3 * 10 * 10), 3, 1, 10, 10);
                    net.forward(x).sum().backward();
                    net.eval();
                    net.forward(x);  // eval forward: no graph, nothing saved
                    net.train();
                }
                after[step] = LiveBytes.onThisThread();
            }
            // The first step creates the parameter gradients; later steps only reuse them.
            assertEquals(after[1], after[2]);
            assertEquals(after[0], after[1]);
        }
    }

    @Test
    void noGraphWithoutGrad() {
        try (var scope = Tensors.scope(); var noGrad = Tensors.noGrad()) {
            Tensor w = Tensor.ones(2, 1, 3, 3).requiresGrad(true);
            Tensor y = Conv2dFunction.apply(Tensor.ones(1, 1, 4, 4), w, null, 1, 0);
            assertNull(y.gradFn());
            assertArrayEquals(new float[] {9, 9, 9, 9, 9, 9, 9, 9}, y.toFloatArray());
        }
    }

    @Test
    void conv2dChannelMismatchNamesBothShapes() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.zeros(8, 3, 28, 28);
            Tensor w = Tensor.zeros(16, 1, 5, 5);
            var e = assertThrows(IllegalArgumentException.class, () -> Conv2dFunction.apply(x, w, null, 1, 2));
            assertTrue(e.getMessage().contains("conv2d") && e.getMessage().contains("[8, 3, 28, 28]")
                    && e.getMessage().contains("[16, 1, 5, 5]"), e.getMessage());
            try (Conv2d conv = new Conv2d(1, 16, 5, 1, 2)) {
                var e2 = assertThrows(IllegalArgumentException.class, () -> conv.forward(x));
                assertTrue(e2.getMessage().contains("3 channels") && e2.getMessage().contains("expects 1"), e2.getMessage());
            }
            var e3 = assertThrows(IllegalArgumentException.class,
                    () -> Conv2dFunction.apply(Tensor.zeros(8, 1, 28, 28), w, Tensor.zeros(4), 1, 2));
            assertTrue(e3.getMessage().contains("[4]") && e3.getMessage().contains("[16, 1, 5, 5]"), e3.getMessage());
        }
    }

    @Test
    void tooSmallInputsAreRejected() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.zeros(1, 1, 3, 3);
            var e = assertThrows(IllegalArgumentException.class,
                    () -> Conv2dFunction.apply(x, Tensor.zeros(2, 1, 5, 5), null, 1, 0));
            assertTrue(e.getMessage().contains("[1, 1, 3, 3]") && e.getMessage().contains("[2, 1, 5, 5]")
                    && e.getMessage().contains("smaller than"), e.getMessage());
            // With padding 1 the same input is big enough.
            assertArrayEquals(new long[] {1, 2, 1, 1}, Conv2dFunction.apply(x, Tensor.zeros(2, 1, 5, 5), null, 1, 1).shape());

            var e2 = assertThrows(IllegalArgumentException.class, () -> MaxPool2dFunction.apply(Tensor.zeros(1, 1, 1, 4), 2, 2, 0));
            assertTrue(e2.getMessage().contains("max_pool2d") && e2.getMessage().contains("[1, 1, 1, 4]"), e2.getMessage());
            var e3 = assertThrows(IllegalArgumentException.class, () -> MaxPool2dFunction.apply(x, 2, 2, 2));
            assertTrue(e3.getMessage().contains("half"), e3.getMessage());
        }
    }

    /**
     * An empty training batch, as torch 1.13 gives it: an empty output, running statistics left
     * alone, num_batches_tracked counted, zero gradients; through a whole ResNet-18 too
     * (torchvision's resnet18(num_classes=10) on [0, 3, 32, 32]: output [0, 10], every gradient 0).
     */
    @Test
    void emptyTrainingBatchGivesAnEmptyOutputAndZeroGradients() {
        try (var scope = Tensors.scope(); BatchNorm2d bn = new BatchNorm2d(3)) {
            bn.runningMean().fill(0.5);
            Tensor x = Tensor.zeros(0, 3, 4, 4).requiresGrad(true);
            Tensor y = bn.forward(x);
            assertArrayEquals(new long[] {0, 3, 4, 4}, y.shape());
            assertArrayEquals(new float[] {0.5f, 0.5f, 0.5f}, bn.runningMean().toFloatArray());
            assertArrayEquals(new float[] {1, 1, 1}, bn.runningVar().toFloatArray());
            assertEquals(1, bn.numBatchesTracked());
            y.sum().backward();
            assertArrayEquals(new long[] {0, 3, 4, 4}, x.grad().shape());
            assertArrayEquals(new float[] {0, 0, 0}, bn.weight().grad().toFloatArray());
            assertArrayEquals(new float[] {0, 0, 0}, bn.bias().grad().toFloatArray());
        }
        try (var scope = Tensors.scope(); ResNet net = ResNet.resnet18(10)) {
            Tensor out = net.forward(Tensor.zeros(0, 3, 32, 32));
            assertArrayEquals(new long[] {0, 10}, out.shape());
            out.sum().backward();
            for (var e : net.namedParameters().entrySet()) {
                assertNotNull(e.getValue().grad(), e.getKey());
                for (float g : e.getValue().grad().toFloatArray()) {
                    assertEquals(0f, g, e.getKey());
                }
            }
        }
    }

    @Test
    void batchNormErrors() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.zeros(8, 3, 4, 4);
            var e = assertThrows(IllegalArgumentException.class, () -> {
                try (BatchNorm2d bn = new BatchNorm2d(16)) {
                    bn.forward(x);
                }
            });
            assertTrue(e.getMessage().contains("[8, 3, 4, 4]") && e.getMessage().contains("[16]"), e.getMessage());
            var e2 = assertThrows(IllegalArgumentException.class, () -> BatchNorm2dFunction.apply(
                    Tensor.zeros(1, 3, 1, 1), null, null, null, null, true, 0.1, 1e-5));
            assertTrue(e2.getMessage().contains("more than 1 value per channel") && e2.getMessage().contains("eval()"),
                    e2.getMessage());
            var e3 = assertThrows(IllegalArgumentException.class, () -> Conv2dFunction.apply(Tensor.zeros(3, 28, 28),
                    Tensor.zeros(16, 1, 5, 5), null, 1, 2));
            assertTrue(e3.getMessage().contains("4-D") && e3.getMessage().contains("[3, 28, 28]"), e3.getMessage());
        }
    }
}
