package org.ddp4j.testing;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.tensor.Tensor;

/**
 * Leaf tensors a test marks as requiring grad; {@link #freeGrads()} (call it from an
 * {@code @AfterEach}) frees the gradients autograd gave them, which live outside any scope.
 */
public final class GradLeaves {
    private final List<Tensor> leaves = new ArrayList<>();

    /** Marks t as a leaf that requires grad and remembers it. Returns t. */
    public Tensor leaf(Tensor t) {
        leaves.add(t);
        return t.requiresGrad(true);
    }

    /** Closes the gradients of every remembered leaf. */
    public void freeGrads() {
        for (Tensor t : leaves) {
            if (t.grad() != null) {
                t.grad().close();
            }
        }
        leaves.clear();
    }
}
