package org.ddp4j.nn;

import org.ddp4j.testing.LiveBytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.nn.functional.BatchNorm2dFunction;
import org.ddp4j.nn.functional.BatchNorm2dReluFunction;
import org.ddp4j.nn.functional.Conv2dFunction;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/**
 * Tensor.release() as ResNet's blocks use it: on the output of the fused batch norm + ReLU the
 * storage goes at once, a later read recomputes the very same bits (with a residual too), and the
 * producer's backward frees the recomputed storage again; on the batch norm's input (a conv
 * output, not recomputable) the storage stays until the batch norm's backward has read it. A
 * backward through released tensors gives the same gradients bit for bit as without, and so does
 * a Sequential, which releases its intermediates. Byte counts are the allocator's exact count of
 * requested bytes in use.
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
                long base = LiveBytes.onThisThread();
                Tensor c = Conv2dFunction.apply(x, w1, null, 1, 1);
                Tensor y = bnRelu(c);
                Tensor z = Conv2dFunction.apply(y, w2, null, 1, 1);
                if (release) {
                    assertTrue(y.release(), "the fused output is recomputable: freed now");
                    assertFalse(c.release(), "a conv output is kept until the batch norm's backward");
                    assertFalse(c.isClosed());
                }
                z.mul(z).sum().backward();
                return LiveBytes.onThisThread() - base;
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
            long inUse = LiveBytes.onThisThread();
            assertTrue(y.release());
            assertEquals(inUse - Y_BYTES, LiveBytes.onThisThread(), "release frees y's storage");
            assertFalse(y.release(), "already released");
            assertFalse(y.isClosed(), "a released tensor stays usable");
            assertArrayEquals(before, y.toFloatArray(), "recomputed values");
            assertEquals(inUse, LiveBytes.onThisThread(), "reading recomputed y once");
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
        assertEquals(heldPlain - 2 * Y_BYTES, heldReleased,
                "the backward frees the recomputed y again, and the conv output after the batch norm's backward");
        plain.close();
        released.close();
    }

    @Test
    void theResidualFormAndThePlainBatchNormAreRecomputedToo() {
        Net net = new Net();
        try (var scope = Tensors.scope()) {
            Tensor residual = random(9, -1, 1, SHAPE);
            Tensor withResidual = BatchNorm2dReluFunction.apply(random(8, -1, 1, SHAPE), net.gamma, net.beta,
                    net.runningMean, net.runningVar, true, 0.1, 1e-5, residual);
            Tensor plainBn = BatchNorm2dFunction.apply(random(11, -1, 1, SHAPE), net.gamma, net.beta,
                    net.runningMean, net.runningVar, true, 0.1, 1e-5);
            float[] a = withResidual.toFloatArray();
            float[] b = plainBn.toFloatArray();
            assertTrue(withResidual.release());
            assertTrue(plainBn.release());
            assertArrayEquals(a, withResidual.toFloatArray(), "relu(bn(x) + residual) recomputed");
            assertArrayEquals(b, plainBn.toFloatArray(), "bn(x) recomputed");
        } finally {
            net.close();
        }
    }

    @Test
    void anOrdinaryTensorThatNoBatchNormReadsStaysUntilItsScopeCloses() {
        try (var scope = Tensors.scope()) {
            Tensor w = random(12, -1, 1, 8).requiresGrad(true);
            Tensor h = w.mul(w);
            long inUse = LiveBytes.onThisThread();
            assertFalse(h.release());
            Tensor loss = h.mul(h).sum();
            loss.backward();
            assertFalse(h.isClosed(), "nothing frees it before the scope");
            assertEquals(8, h.toFloatArray().length);
            assertTrue(LiveBytes.onThisThread() >= inUse);
            w.grad().close();
        }
    }

    @Test
    void aSecondBackwardThroughAFreedConvOutputIsRefusedByName() {
        Net net = new Net();
        try (var scope = Tensors.scope()) {
            Tensor c = Conv2dFunction.apply(net.x, net.w1, null, 1, 1);
            Tensor y = net.bnRelu(c);
            c.release();
            Tensor loss = y.mul(y).sum();
            loss.backward();
            assertTrue(c.isClosed(), "freed once the batch norm's backward has read it");
            IllegalStateException e = assertThrows(IllegalStateException.class, loss::backward);
            assertTrue(e.getMessage().contains("freed after the backward") && e.getMessage().contains("forward again"),
                    e.getMessage());
        } finally {
            net.close();
        }
    }

    @Test
    void aSequentialReleasesItsIntermediatesAndGivesTheSameGradients() {
        Generator g = new Generator(3);
        Conv2d conv1 = new Conv2d(3, 6, 3, 1, 1, false, g);
        BatchNorm2d bn = new BatchNorm2d(6);
        Conv2d conv2 = new Conv2d(6, 5, 3, 1, 1, false, g);
        Sequential seq = new Sequential(conv1, bn, new ReLU(), conv2);
        Tensor x = random(13, -2, 2, 4, 3, 9, 11).keep();
        List<float[]> bySequential = gradients(seq, () -> seq.forward(x));
        List<float[]> byHand = gradients(seq, () -> conv2.forward(bn.forwardRelu(conv1.forward(x), null)));
        for (int i = 0; i < bySequential.size(); i++) {
            assertArrayEquals(byHand.get(i), bySequential.get(i), "parameter " + i);
        }
        x.close();
    }

    /** The parameter gradients of one backward of sum(out²), the gradients zeroed first. */
    private static List<float[]> gradients(Module m, java.util.function.Supplier<Tensor> forward) {
        m.zeroGrad(true);
        try (var scope = Tensors.scope()) {
            Tensor out = forward.get();
            out.mul(out).sum().backward();
        }
        List<float[]> grads = new ArrayList<>();
        for (Tensor p : m.parameters()) {
            grads.add(p.grad().toFloatArray());
        }
        return grads;
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
