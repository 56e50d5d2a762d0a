package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.ddp4j.testing.LiveBytes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The backward engine frees each gradient of a non-leaf as soon as its node has used it, as
 * PyTorch's engine does, so backward through a deep network holds a few layers' gradients at a
 * time, not one per op until the training step's scope closes (on a ResNet-50 that was as much
 * native memory again as the activations). Checked with exact byte counts of live native memory.
 */
class BackwardFreesGradientsTest {
    private static final int N = 1 << 18; // 1 MiB of float32 per tensor
    private static final long BYTES = 4L * N;

    private final List<Tensor> leaves = new ArrayList<>();

    @AfterEach
    void freeLeaves() {
        for (Tensor leaf : leaves) {
            if (leaf.grad() != null) {
                leaf.grad().close();
            }
            leaf.close();
        }
    }

    private Tensor leaf() {
        float[] values = new float[N];
        Arrays.fill(values, 1f);
        Tensor t = Tensor.of(values, N).requiresGrad(true).keep();
        leaves.add(t);
        return t;
    }

    /** An identity op that records the native bytes in use while its backward runs. */
    private static Tensor probe(Tensor input, long[] seen) {
        return new Node("Probe", input) {
            @Override
            protected Tensor[] backward(Tensor g) {
                seen[0] = LiveBytes.onThisThread();
                return new Tensor[] {g};
            }
        }.attach(input.detach());
    }

    /**
     * Through a chain of 8 scalings, the first op's backward sees exactly one gradient alive (its
     * own): the 7 above it and the root's seed are already freed. After backward only the leaf's
     * gradient has been added to what forward left.
     */
    @Test
    void aChainHoldsOneGradientAtATime() {
        Tensor x = leaf();
        long[] seen = {-1};
        try (var scope = Tensors.scope()) {
            Tensor h = probe(x, seen);
            for (int i = 0; i < 8; i++) {
                h = h.mul(2f);
            }
            Tensor loss = h.sum();
            long afterForward = LiveBytes.onThisThread();
            loss.backward();
            assertEquals(afterForward + BYTES, seen[0], "live gradients during the first op's backward");
            assertEquals(afterForward + BYTES, LiveBytes.onThisThread(), "after backward: forward's tensors + x.grad");
        }
        assertArrayEquals(new float[] {256, 256}, Arrays.copyOf(x.grad().toFloatArray(), 2));
    }

    /**
     * A gradient that goes to two consumers (an add passes its gradient to both inputs) stays alive
     * until both have run, and a leaf used twice gets the sum: d/dx (2x + 3x) = 5.
     */
    @Test
    void aGradientSharedByTwoConsumersLivesUntilBothRan() {
        Tensor x = leaf();
        try (var scope = Tensors.scope()) {
            Tensor a = x.mul(2f);
            Tensor b = x.mul(3f);
            Tensor loss = a.add(b).sum();
            long afterForward = LiveBytes.onThisThread();
            loss.backward();
            assertEquals(afterForward + BYTES, LiveBytes.onThisThread(), "after backward: forward's tensors + x.grad");
        }
        float[] g = x.grad().toFloatArray();
        assertEquals(5f, g[0]);
        assertEquals(5f, g[N - 1]);
    }

    /** A gradient the caller passes to backward(gradient) is the caller's: the engine leaves it open. */
    @Test
    void theCallersGradientIsNotFreed() {
        Tensor x = leaf();
        try (var scope = Tensors.scope()) {
            Tensor y = x.mul(3f).mul(1f);
            Tensor g = Tensor.ones(N);
            y.backward(g);
            assertFalse(g.isClosed());
            assertEquals(1f, g.toFloatArray()[0]);
        }
        assertEquals(3f, x.grad().toFloatArray()[0]);
    }
}
