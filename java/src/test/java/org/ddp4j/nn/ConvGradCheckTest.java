package org.ddp4j.nn;

import org.ddp4j.nn.functional.BatchNorm2dFunction;
import org.ddp4j.nn.functional.Conv2dFunction;
import org.ddp4j.nn.functional.MaxPool2dFunction;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.GradCheck;
import org.junit.jupiter.api.Test;

/** The conv, batch-norm and max-pool backward kernels against central finite differences. */
class ConvGradCheckTest {
    private static final int MAX_ELEMENTS = 200;

    private static Tensor random(long seed, float scale, long... shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        float[] v = new Generator(seed).normal(Math.toIntExact(n));
        for (int i = 0; i < v.length; i++) {
            v[i] *= scale;
        }
        return Tensor.of(v, shape);
    }

    private static void closeGrad(Tensor t) {
        if (t.grad() != null) {
            t.grad().close();
        }
    }

    @Test
    void conv2d() {
        // Linear in each argument, so differences are exact up to float32 rounding: a big step is fine.
        for (int[] geo : new int[][] {{1, 2}, {2, 1}, {3, 0}}) {
            int stride = geo[0];
            int padding = geo[1];
            try (var scope = Tensors.scope()) {
                Tensor x = random(1, 1f, 2, 3, 7, 6);
                Tensor w = random(2, 0.5f, 4, 3, 3, 3);
                Tensor b = random(3, 1f, 4);
                String what = "conv2d stride " + stride + " padding " + padding;
                x.requiresGrad(true);
                GradCheck.check(t -> Conv2dFunction.apply(t, w, b, stride, padding), x, 1e-2, 1e-3, 1e-3, MAX_ELEMENTS,
                        what + " d/dx");
                x.requiresGrad(false);
                closeGrad(x);
                w.requiresGrad(true);
                GradCheck.check(t -> Conv2dFunction.apply(x, t, b, stride, padding), w, 1e-2, 1e-3, 1e-3, MAX_ELEMENTS,
                        what + " d/dw");
                w.requiresGrad(false);
                closeGrad(w);
                b.requiresGrad(true);
                GradCheck.check(t -> Conv2dFunction.apply(x, w, t, stride, padding), b, 1e-2, 1e-3, 1e-3, MAX_ELEMENTS,
                        what + " d/db");
                closeGrad(b);
            }
        }
    }

    @Test
    void batchNorm2dTraining() {
        try (var scope = Tensors.scope()) {
            Tensor x = random(4, 2f, 3, 2, 4, 5);
            Tensor gamma = Tensor.of(new float[] {0.7f, 1.6f}, 2);
            Tensor beta = Tensor.of(new float[] {0.2f, -0.4f}, 2);
            Tensor rm = Tensor.zeros(2);
            Tensor rv = Tensor.ones(2);
            checkAll(x, gamma, beta, rm, rv, true, "batch_norm2d (train)");
        }
    }

    @Test
    void batchNorm2dEval() {
        try (var scope = Tensors.scope()) {
            Tensor x = random(5, 2f, 3, 2, 4, 5);
            Tensor gamma = Tensor.of(new float[] {0.7f, 1.6f}, 2);
            Tensor beta = Tensor.of(new float[] {0.2f, -0.4f}, 2);
            Tensor rm = Tensor.of(new float[] {0.3f, -1f}, 2);
            Tensor rv = Tensor.of(new float[] {2f, 0.5f}, 2);
            checkAll(x, gamma, beta, rm, rv, false, "batch_norm2d (eval)");
        }
    }

    private static void checkAll(Tensor x, Tensor gamma, Tensor beta, Tensor rm, Tensor rv, boolean training,
            String what) {
        // Normalisation is non-linear: a smaller step, and a tolerance for its second-order error.
        x.requiresGrad(true);
        GradCheck.check(t -> BatchNorm2dFunction.apply(t, gamma, beta, rm, rv, training, 0.1, 1e-5), x, 1e-2, 1e-2,
                2e-3, MAX_ELEMENTS, what + " d/dx");
        x.requiresGrad(false);
        closeGrad(x);
        gamma.requiresGrad(true);
        GradCheck.check(t -> BatchNorm2dFunction.apply(x, t, beta, rm, rv, training, 0.1, 1e-5), gamma, 1e-2, 1e-2,
                2e-3, MAX_ELEMENTS, what + " d/dgamma");
        gamma.requiresGrad(false);
        closeGrad(gamma);
        beta.requiresGrad(true);
        GradCheck.check(t -> BatchNorm2dFunction.apply(x, gamma, t, rm, rv, training, 0.1, 1e-5), beta, 1e-2, 1e-2,
                2e-3, MAX_ELEMENTS, what + " d/dbeta");
        closeGrad(beta);
    }

    @Test
    void maxPool2d() {
        // Distinct values 0.01 apart and a step of 1e-3: no perturbation changes which element wins.
        int n = 2 * 3 * 7 * 7;
        int[] perm = new Generator(6).permutation(n);
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (perm[i] - n / 2) * 0.01f;
        }
        for (int[] geo : new int[][] {{2, 2, 0}, {3, 2, 1}, {3, 1, 1}}) {
            try (var scope = Tensors.scope()) {
                Tensor x = Tensor.of(v, 2, 3, 7, 7).requiresGrad(true);
                GradCheck.check(t -> MaxPool2dFunction.apply(t, geo[0], geo[1], geo[2]), x, 1e-3, 1e-3, 1e-3,
                        MAX_ELEMENTS, "max_pool2d kernel " + geo[0] + " stride " + geo[1] + " padding " + geo[2]);
                closeGrad(x);
            }
        }
    }
}
