package org.ddp4j.nn;

import org.ddp4j.testing.LiveBytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/** Linear's parameters and initialisation, ReLU / Flatten modules, and a small training loop. */
class LayersTest {
    @Test
    void linearHasPyTorchParameterNamesShapesAndInitBounds() {
        try (Linear layer = new Linear(50, 20, true, new Generator(7))) {
            assertEquals(List.of("weight", "bias"), List.copyOf(layer.namedParameters().keySet()));
            assertArrayEquals(new long[] {20, 50}, layer.weight().shape());
            assertArrayEquals(new long[] {20}, layer.bias().shape());
            assertTrue(layer.weight().requiresGrad() && layer.bias().requiresGrad());
            double bound = 1 / Math.sqrt(50);
            float max = 0;
            for (float v : layer.weight().toFloatArray()) {
                assertTrue(Math.abs(v) <= bound, "weight " + v + " outside ±" + bound);
                max = Math.max(max, Math.abs(v));
            }
            assertTrue(max > 0.8 * bound, "1000 uniform draws should come near the bound, max " + max);
            for (float v : layer.bias().toFloatArray()) {
                assertTrue(Math.abs(v) <= bound, "bias " + v + " outside ±" + bound);
            }
            assertEquals("Linear(in_features=50, out_features=20, bias=True)", layer.toString());
        }
    }

    @Test
    void linearIsReproducibleFromASeedAndCanOmitBias() {
        try (Linear a = new Linear(3, 2, true, new Generator(11)); Linear b = new Linear(3, 2, true, new Generator(11));
                Linear c = new Linear(3, 2, false, new Generator(11))) {
            assertArrayEquals(a.weight().toFloatArray(), b.weight().toFloatArray());
            assertArrayEquals(a.bias().toFloatArray(), b.bias().toFloatArray());
            assertNull(c.bias());
            assertEquals(List.of("weight"), List.copyOf(c.namedParameters().keySet()));
        }
    }

    @Test
    void linearParametersOutliveTheScopeThatBuiltThem() {
        Linear layer;
        try (var scope = Tensors.scope()) {
            layer = new Linear(2, 2);
        }
        try (layer) {
            assertTrue(!layer.weight().isClosed() && !layer.bias().isClosed());
        }
    }

    @Test
    void flattenKeepsTheBatchDimension() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.zeros(2, 3, 4, 5).requiresGrad(true);
            Tensor y = new Flatten().forward(x);
            assertArrayEquals(new long[] {2, 60}, y.shape());
            y.sum().backward();
            assertArrayEquals(new long[] {2, 3, 4, 5}, x.grad().shape());
            x.grad().close();
            assertArrayEquals(new long[] {0, 12}, new Flatten().forward(Tensor.zeros(0, 3, 4)).shape());
            assertThrows(IllegalArgumentException.class, () -> new Flatten().forward(Tensor.zeros(3)));
        }
    }

    @Test
    void sequentialNamesChildParametersLikePyTorch() {
        try (Sequential net = new Sequential(new Linear(4, 8), new ReLU(), new Flatten(), new Linear(8, 3))) {
            assertEquals(List.of("0.weight", "0.bias", "3.weight", "3.bias"), List.copyOf(net.namedParameters().keySet()));
        }
    }

    @Test
    void smallNetworkLearnsWithSgdWithoutLeakingMemory() {
        Generator g = new Generator(3);
        float[] xs = g.normal(16 * 4);
        long[] labels = new long[16];
        for (int i = 0; i < 16; i++) {
            labels[i] = xs[i * 4] + xs[i * 4 + 1] > 0 ? 1 : 0; // a linearly separable rule
        }
        try (Sequential net = new Sequential(new Linear(4, 16, true, g), new ReLU(), new Linear(16, 2, true, g));
                SGD opt = new SGD(net.parameters(), 0.1, 0.9, 0, 0, false)) {
            CrossEntropyLoss criterion = new CrossEntropyLoss();
            float first = 0;
            float last = 0;
            long bytesAfterWarmup = 0;
            for (int step = 0; step < 60; step++) {
                try (var scope = Tensors.scope()) {
                    Tensor loss = criterion.forward(net.forward(Tensor.of(xs, 16, 4)), Tensor.ofLongs(labels, 16));
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                    if (step == 0) {
                        first = loss.item();
                    }
                    last = loss.item();
                }
                if (step == 1) {
                    bytesAfterWarmup = LiveBytes.onThisThread(); // grads and momentum buffers exist now
                }
            }
            assertEquals(bytesAfterWarmup, LiveBytes.onThisThread(), "native memory grew during training");
            assertTrue(last < 0.5 * first, "loss should fall: first " + first + ", last " + last);
        }
    }
}
