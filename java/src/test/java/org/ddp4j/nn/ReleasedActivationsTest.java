package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.nn.functional.BatchNorm2dReluFunction;
import org.ddp4j.nn.functional.Conv2dFunction;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/**
 * Tensor.release() on the output of the fused batch norm + ReLU (what ResNet's blocks do once the
 * next convolution has read it): the storage goes at once, a later read recomputes the very same
 * bits, a backward through it gives the same gradients bit for bit as without the release, and
 * the producer's backward frees the recomputed storage again. Byte counts are the allocator's
 * exact count of requested bytes in use.
 */
class ReleasedActivationsTest {
    private static final long[] SHAPE = {4, 6, 9, 11};
    private static final long Y_BYTES = 4L * 4 * 6 * 9 * 11;

    private static Tensor random(int seed, float lo, float hi, long... shape) {
        int n = 1;
        for (long s : shape) {
            n *= (int) s;
        }
        float[] v = new float[n];
        long state = seed * 0x9E3779B97F4A7C15L + 1;
        for (int i = 0; i < n; i++) {
            state = state * 6364136223846793005L + 1442695040888963407L;
            v[i] = lo + (hi - lo) * ((state >>> 40) / (float) (1 << 24));
        }
        return Tensor.of(v, shape);
    }

    /** Parameters of conv1 → bn + ReLU → conv2, as leaves outside any scope. */
    private static final class Net {
        final Tensor x = random(1, -2, 2, 4, 3, 9, 11).requiresGrad(true).keep();
        final Tensor w1 = random(2, -0.3f, 0.3f, 6, 3, 3, 3).requiresGrad(true).keep();
        final Tensor gamma = random(3, 0.5f, 1.5f, 6).requiresGrad(true).keep();
        final Tensor beta = random(4, -0.5f, 0.5f, 6).requiresGrad(true).keep();
        final Tensor w2 = random(5, -0.3f, 0.3f, 5, 6, 3, 3).requiresGrad(true).keep();
        final Tensor runningMean = Tensor.zeros(6).keep();
        final Tensor runningVar = Tensor.ones(6).keep();

        List<Tensor> leaves() {
            return List.of(x, w1, gamma, beta, w2);
        }

        Tensor bnRelu(Tensor h) {
            return BatchNorm2dReluFunction.apply(h, gamma, beta, runningMean, runningVar, true, 0.1, 1e-5, null);
        }

        /** One forward and backward; returns the native bytes the scope still holds after backward. */
        long step(boolean release) {
            try (var scope = Tensors.scope()) {
                long base = Tensors.nativeBytesInUse();
                Tensor y = bnRelu(Conv2dFunction.apply(x, w1, null, 1, 1));
                Tensor z = Conv2dFunction.apply(y, w2, null, 1, 1);
                if (release) {
                    assertTrue(y.release(), "the fused output without a residual is recomputable");
                }
                z.mul(z).sum().backward();
                return Tensors.nativeBytesInUse() - base;
            }
        }

        List<float[]> grads() {
            List<float[]> out = new ArrayList<>();
            for (Tensor t : leaves()) {
                out.add(t.grad().toFloatArray());
            }
            return out;
        }

        void close() {
            for (Tensor t : leaves()) {
                if (t.grad() != null) {
                    t.grad().close();
                }
                t.close();
            }
            runningMean.close();
            runningVar.close();
        }
    }

    @Test
    void aReleasedOutputFreesItsStorageAndIsRecomputedBitForBit() {
        Net net = new Net();
        try (var scope = Tensors.scope()) {
            Tensor h = random(6, -3, 3, SHAPE);
            Tensor y = net.bnRelu(h);
            float[] before = y.toFloatArray();
            long inUse = Tensors.nativeBytesInUse();
            assertTrue(y.release());
            assertEquals(inUse - Y_BYTES, Tensors.nativeBytesInUse(), "release frees y's storage");
            assertFalse(y.release(), "already released");
            assertFalse(y.isClosed(), "a released tensor stays usable");
            assertArrayEquals(before, y.toFloatArray(), "recomputed values");
            assertEquals(inUse, Tensors.nativeBytesInUse(), "reading recomputed y once");
        } finally {
            net.close();
        }
    }

    @Test
    void backwardThroughAReleasedOutputGivesTheSameGradientsAndFreesItAgain() {
        Net plain = new Net();
        Net released = new Net();
        long heldPlain = plain.step(false);
        long heldReleased = released.step(true);
        List<float[]> a = plain.grads();
        List<float[]> b = released.grads();
        for (int i = 0; i < a.size(); i++) {
            assertArrayEquals(a.get(i), b.get(i), "gradient " + i + " bit for bit");
        }
        assertArrayEquals(plain.runningVar.toFloatArray(), released.runningVar.toFloatArray());
        assertEquals(heldPlain - Y_BYTES, heldReleased, "the backward frees the recomputed y again");
        plain.close();
        released.close();
    }

    @Test
    void tensorsThatCannotBeRecomputedAreLeftAsTheyAre() {
        Net net = new Net();
        try (var scope = Tensors.scope()) {
            Tensor plain = random(7, -1, 1, SHAPE);
            assertFalse(plain.release(), "an ordinary tensor");
            Tensor withResidual = BatchNorm2dReluFunction.apply(random(8, -1, 1, SHAPE), net.gamma, net.beta,
                    net.runningMean, net.runningVar, true, 0.1, 1e-5, random(9, -1, 1, SHAPE));
            assertFalse(withResidual.release(), "the residual form keeps its output");
            assertEquals(4 * 6 * 9 * 11, plain.toFloatArray().length);
            assertEquals(4 * 6 * 9 * 11, withResidual.toFloatArray().length);
        } finally {
            net.close();
        }
    }

    @Test
    void aClosedReleasedTensorStaysClosed() {
        Net net = new Net();
        try (var scope = Tensors.scope()) {
            Tensor y = net.bnRelu(random(10, -1, 1, SHAPE));
            assertTrue(y.release());
            y.close();
            assertTrue(y.isClosed());
            assertFalse(y.release());
            IllegalStateException e = assertThrows(IllegalStateException.class, y::toFloatArray);
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        } finally {
            net.close();
        }
    }
}
