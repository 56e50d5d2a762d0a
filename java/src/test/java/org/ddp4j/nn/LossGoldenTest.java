package org.ddp4j.nn;

import org.ddp4j.testing.LiveBytes;
import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.ddp4j.testing.GradLeaves;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** MSE and cross-entropy losses against PyTorch (golden/mse_loss.json, golden/cross_entropy.json). */
class LossGoldenTest {
    static final double RTOL = 1e-5;
    static final double ATOL = 1e-6;

    private final GradLeaves leaves = new GradLeaves();

    private Tensor leaf(Tensor t) {
        return leaves.leaf(t);
    }

    @AfterEach
    void freeGrads() {
        leaves.freeGrads();
    }

    @Test
    void mseLossMatchesPyTorch() {
        Golden g = Golden.load("mse_loss");
        try (var scope = Tensors.scope()) {
            Tensor input = leaf(g.tensor("input"));
            Tensor target = leaf(g.tensor("target"));
            Tensor loss = new MSELoss().forward(input, target);
            assertArrayEquals(new long[0], loss.shape());
            assertClose(g.tensor("loss"), loss, RTOL, ATOL, "mse loss");
            loss.backward();
            assertClose(g.tensor("ginput"), input.grad(), RTOL, ATOL, "mse grad input");
            assertClose(g.tensor("gtarget"), target.grad(), RTOL, ATOL, "mse grad target");
        }
    }

    @Test
    void crossEntropyMatchesPyTorchIncludingHugeLogits() {
        Golden g = Golden.load("cross_entropy");
        try (var scope = Tensors.scope()) {
            Tensor logits = leaf(g.tensor("logits"));
            Tensor loss = new CrossEntropyLoss().forward(logits, g.tensor("target"));
            assertArrayEquals(new long[0], loss.shape());
            assertTrue(Float.isFinite(loss.item()), "loss with logits of ±1e4 must be finite: " + loss.item());
            assertClose(g.tensor("loss"), loss, RTOL, ATOL, "cross entropy loss");
            loss.backward();
            assertClose(g.tensor("glogits"), logits.grad(), RTOL, ATOL, "cross entropy grad logits");
        }
    }

    @Test
    void crossEntropyScalesByTheUpstreamGradient() {
        Golden g = Golden.load("cross_entropy");
        try (var scope = Tensors.scope()) {
            Tensor logits = leaf(g.tensor("logits"));
            Tensor loss = Functional.crossEntropy(logits, g.tensor("target"));
            loss.backward(Tensor.scalar((float) g.number("gout_scaled")));
            assertClose(g.tensor("glogits_scaled"), logits.grad(), RTOL, ATOL, "cross entropy grad (scaled)");
        }
    }

    @Test
    void crossEntropyRejectsOutOfRangeTargetsNamingValueAndClasses() {
        try (var scope = Tensors.scope()) {
            Tensor logits = Tensor.zeros(3, 4);
            var e = assertThrows(IllegalArgumentException.class,
                    () -> Functional.crossEntropy(logits, Tensor.ofLongs(new long[] {0, 4, 1}, 3)));
            assertTrue(e.getMessage().contains("target 4") && e.getMessage().contains("4 classes"), e.getMessage());
            var neg = assertThrows(IllegalArgumentException.class,
                    () -> Functional.crossEntropy(logits, Tensor.ofLongs(new long[] {0, 1, -1}, 3)));
            assertTrue(neg.getMessage().contains("target -1"), neg.getMessage());
        }
    }

    @Test
    void crossEntropyChecksShapesAndDtypes() {
        try (var scope = Tensors.scope()) {
            Tensor logits = Tensor.zeros(3, 4);
            var rows = assertThrows(IllegalArgumentException.class,
                    () -> Functional.crossEntropy(logits, Tensor.ofLongs(new long[] {0, 1}, 2)));
            assertTrue(rows.getMessage().contains("[3, 4]") && rows.getMessage().contains("[2]"), rows.getMessage());
            var dtype = assertThrows(IllegalArgumentException.class,
                    () -> Functional.crossEntropy(logits, Tensor.zeros(3)));
            assertTrue(dtype.getMessage().contains("int64"), dtype.getMessage());
        }
    }

    @Test
    void mseLossShapeMismatchNamesBothShapes() {
        try (var scope = Tensors.scope()) {
            var e = assertThrows(IllegalArgumentException.class,
                    () -> Functional.mseLoss(Tensor.zeros(4, 2), Tensor.zeros(2, 4)));
            assertTrue(e.getMessage().contains("mse_loss") && e.getMessage().contains("[4, 2]")
                    && e.getMessage().contains("[2, 4]"), e.getMessage());
        }
    }

    @Test
    void crossEntropyUnderNoGradFreesSavedProbabilities() {
        // Under noGrad no graph is recorded and the saved probabilities are freed at once.
        try (var scope = Tensors.scope(); var noGrad = Tensors.noGrad()) {
            Tensor logits = Tensor.of(new float[] {0, 0}, 1, 2).requiresGrad(true);
            long before = LiveBytes.onThisThread();
            Tensor loss = Functional.crossEntropy(logits, Tensor.ofLongs(new long[] {1}, 1));
            assertEquals((float) Math.log(2), loss.item(), 1e-6);
            assertTrue(loss.isLeaf());
            // loss (4 bytes) and the targets (8 bytes) remain; the [1, 2] probabilities are gone.
            assertEquals(before + 12, LiveBytes.onThisThread());
        }
    }
}
