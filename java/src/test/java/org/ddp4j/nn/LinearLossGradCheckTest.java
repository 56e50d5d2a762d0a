package org.ddp4j.nn;

import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.testing.GradCheck;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Finite-difference checks of the linear, ReLU, MSE and cross-entropy backward kernels. */
class LinearLossGradCheckTest {
    // Central differences in float32: h = 1e-2 keeps rounding noise (~1e-7 / h) well below the tolerance.
    static final double H = 1e-2;
    static final double RTOL = 1e-2;
    static final double ATOL = 1e-3;

    private Tensor x;
    private Tensor w;
    private Tensor b;

    private static Tensor random(long seed, long... shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        return Tensor.of(new Generator(seed).normal(Math.toIntExact(n)), shape).keep();
    }

    @BeforeEach
    void setUp() {
        x = random(1, 5, 4).requiresGrad(true);
        w = random(2, 3, 4).requiresGrad(true);
        b = random(3, 3).requiresGrad(true);
    }

    @AfterEach
    void tearDown() {
        for (Tensor t : new Tensor[] {x, w, b}) {
            if (t.grad() != null) {
                t.grad().close();
            }
            t.close();
        }
    }

    @Test
    void linearInput() {
        GradCheck.check(in -> Functional.linear(in, w, b), x, H, RTOL, ATOL, 100, "linear d/dx");
    }

    @Test
    void linearWeight() {
        GradCheck.check(weight -> Functional.linear(x, weight, b), w, H, RTOL, ATOL, 100, "linear d/dw");
    }

    @Test
    void linearBias() {
        GradCheck.check(bias -> Functional.linear(x, w, bias), b, H, RTOL, ATOL, 100, "linear d/db");
    }

    @Test
    void linearWithLeadingDimensions() {
        try (Tensor x3 = random(4, 2, 3, 4).requiresGrad(true)) {
            GradCheck.check(in -> Functional.linear(in, w, b), x3, H, RTOL, ATOL, 100, "linear [2, 3, 4] d/dx");
            x3.grad().close();
        }
    }

    @Test
    void relu() {
        // Keep every element at least 0.1 away from the kink at 0, where finite differences are meaningless.
        float[] v = new Generator(5).normal(20);
        for (int i = 0; i < v.length; i++) {
            v[i] = v[i] >= 0 ? v[i] + 0.1f : v[i] - 0.1f;
        }
        try (Tensor in = Tensor.of(v, 4, 5).keep().requiresGrad(true)) {
            GradCheck.check(Functional::relu, in, H, RTOL, ATOL, 100, "relu d/dx");
            in.grad().close();
        }
    }

    @Test
    void mseLossInputAndTarget() {
        try (Tensor target = random(6, 5, 4).requiresGrad(true)) {
            GradCheck.check(in -> Functional.mseLoss(in, target), x, H, RTOL, ATOL, 100, "mse d/dinput");
            GradCheck.check(t -> Functional.mseLoss(x, t), target, H, RTOL, ATOL, 100, "mse d/dtarget");
            target.grad().close();
        }
    }

    @Test
    void crossEntropy() {
        try (Tensor target = Tensor.ofLongs(new long[] {0, 3, 1, 1, 2}, 5).keep()) {
            GradCheck.check(logits -> Functional.crossEntropy(logits, target), x, H, RTOL, ATOL, 100,
                    "cross entropy d/dlogits");
        }
    }

    @Test
    void linearReluCrossEntropyChain() {
        try (Tensor target = Tensor.ofLongs(new long[] {2, 0, 1, 1, 2}, 5).keep()) {
            GradCheck.check(weight -> Functional.crossEntropy(Functional.relu(Functional.linear(x, weight, b)), target),
                    w, 1e-3, 2e-2, 2e-3, 100, "linear → relu → cross entropy d/dw");
        }
    }
}
