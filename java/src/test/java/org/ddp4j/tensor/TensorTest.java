package org.ddp4j.tensor;

import org.ddp4j.testing.LiveBytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TensorTest {

    @Test
    void roundTripsValuesAndShape() {
        try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            assertArrayEquals(new long[] {2, 3}, t.shape());
            assertEquals(DType.FLOAT32, t.dtype());
            assertEquals(Device.CPU, t.device());
            assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, t.toFloatArray());
        }
        try (Tensor t = Tensor.ofLongs(new long[] {7, -1}, 2)) {
            assertArrayEquals(new long[] {7, -1}, t.toLongArray());
        }
    }

    @Test
    void wrongValueCountNamesShape() {
        var e = assertThrows(IllegalArgumentException.class, () -> Tensor.of(new float[] {1, 2, 3}, 2, 2));
        assertTrue(e.getMessage().contains("[2, 2]"), e.getMessage());
    }

    @Test
    void reshapeSharesStorageAndChecksSize() {
        try (var scope = Tensors.scope()) {
            Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
            Tensor v = t.reshape(3, -1);
            assertArrayEquals(new long[] {3, 2}, v.shape());
            v.fill(0.5);
            assertArrayEquals(new float[] {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, t.toFloatArray());
            var e = assertThrows(IllegalArgumentException.class, () -> t.reshape(4, 2));
            assertTrue(e.getMessage().contains("[4, 2]") && e.getMessage().contains("[2, 3]"), e.getMessage());
        }
    }

    @Test
    void closedTensorGivesClearError() {
        Tensor t = Tensor.zeros(2);
        t.close();
        var e = assertThrows(IllegalStateException.class, t::toFloatArray);
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    void scopeFreesNativeMemory() {
        long before = LiveBytes.onThisThread();
        Tensor kept;
        try (var scope = Tensors.scope()) {
            Tensor.zeros(1000);
            kept = Tensor.ones(10).keep();
            assertTrue(LiveBytes.onThisThread() >= before + 4040);
        }
        assertEquals(before + 40, LiveBytes.onThisThread());
        kept.close();
        assertEquals(before, LiveBytes.onThisThread());
    }

    @Test
    void elementwiseGradients() {
        try (var scope = Tensors.scope()) {
            Tensor a = Tensor.of(new float[] {1, 2, 3}, 3).requiresGrad(true);
            Tensor b = Tensor.of(new float[] {4, 5, 6}, 3).requiresGrad(true);
            // loss = sum(a * b - a) * 0.5 ; dloss/da = (b - 1) / 2, dloss/db = a / 2
            Tensor loss = a.mul(b).sub(a).sum().mul(0.5f);
            assertEquals((4 + 10 + 18 - 6) * 0.5f, loss.item(), 1e-6);
            loss.backward();
            assertArrayEquals(new float[] {1.5f, 2f, 2.5f}, a.grad().toFloatArray(), 1e-6f);
            assertArrayEquals(new float[] {0.5f, 1f, 1.5f}, b.grad().toFloatArray(), 1e-6f);
            a.grad().close();
            b.grad().close();
        }
    }

    @Test
    void argmaxPicksFirstMaximum() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.of(new float[] {1, 3, 3, -1, -5, -2}, 2, 3);
            assertArrayEquals(new long[] {1, 0}, x.argmax(1).toLongArray());
        }
    }

    @Test
    void argmaxTreatsNanAsTheMaximumAsPyTorchDoes() {
        try (var scope = Tensors.scope()) {
            float nan = Float.NaN;
            Tensor x = Tensor.of(new float[] {1, nan, 100, 5, nan, 3, nan, 7, nan}, 3, 3);
            assertArrayEquals(new long[] {1, 1, 0}, x.argmax(1).toLongArray());
        }
    }

    @Test
    void formatsLikePyTorch() {
        try (Tensor t = Tensor.of(new float[] {0.1f, 0.2f, 0.3f, 0.4f}, 2, 2)) {
            assertEquals("tensor([[0.1000, 0.2000],\n        [0.3000, 0.4000]])", t.toString());
        }
    }
}
