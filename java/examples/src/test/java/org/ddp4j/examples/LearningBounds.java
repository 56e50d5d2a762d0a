package org.ddp4j.examples;

/**
 * Loose bounds that tell "the demo trained" from "it did not", for demo tests on real data. A
 * short run's last-batch loss and test accuracy move with the GEMM's rounding (a few points of
 * accuracy between OpenBLAS's kernels for one CPU), so these sit far from every value seen on any
 * CPU (losses 0.4 to 1.0, accuracies 0.55 to 0.75) and near what an untrained model gives
 * (ln 10 = 2.30 and 0.10): they fail when training is broken, never because of rounding. Exact
 * checks (ranks ending with one state, two transports giving one result) do the rest.
 */
final class LearningBounds {
    private LearningBounds() {}

    /** Below an untrained 10-class model's ln(10) = 2.30 by a margin no batch of a trained model approaches. */
    static final double LEARNED_LOSS = 2.0;

    /** Three times chance. */
    static final double LEARNED_ACCURACY = 0.3;
}
