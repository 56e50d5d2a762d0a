package org.ddp4j.testing;

import java.util.function.Function;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * Finite-difference checks of backward kernels. The scalar checked is L = Σ f(x) ⊙ r for a fixed
 * random r, so every output element contributes; dL/dx from autograd is compared with central
 * differences (L(x + h e_i) - L(x - h e_i)) / 2h, computed in double from float32 forwards.
 */
public final class GradCheck {
    private GradCheck() {}

    /**
     * Checks the gradient of f with respect to {@code input} (a leaf that requires grad) at up to
     * {@code maxElements} evenly spread elements.
     */
    public static void check(Function<Tensor, Tensor> f, Tensor input, double h, double rtol, double atol,
            int maxElements, String what) {
        try (var scope = Tensors.scope()) {
            Tensor probe = f.apply(input);
            float[] r = new Generator(42).uniform(Math.toIntExact(probe.numel()), -1f, 1f);
            Tensor weights = Tensor.of(r, probe.shape());
            if (input.grad() != null) {
                input.grad().fill(0);
            }
            probe.mul(weights).sum().backward();
            float[] analytic = input.grad().toFloatArray();
            float[] base = input.toFloatArray();
            int n = base.length;
            int step = Math.max(1, n / maxElements);
            int count = (n + step - 1) / step;
            float[] numeric = new float[count];
            float[] picked = new float[count];
            try (var noGrad = Tensors.noGrad()) {
                for (int k = 0, i = 0; i < n; i += step, k++) {
                    float[] x = base.clone();
                    x[i] = (float) (base[i] + h);
                    double plus = weightedSum(f, input, x, r);
                    x[i] = (float) (base[i] - h);
                    double minus = weightedSum(f, input, x, r);
                    numeric[k] = (float) ((plus - minus) / (2 * h));
                    picked[k] = analytic[i];
                }
                input.copyFrom(Tensor.of(base, input.shape()));
            }
            Assertions2.assertClose(numeric, picked, rtol, atol, what + " (autograd vs finite differences)");
        }
    }

    private static double weightedSum(Function<Tensor, Tensor> f, Tensor input, float[] x, float[] r) {
        try (var scope = Tensors.scope()) {
            input.copyFrom(Tensor.of(x, input.shape()));
            float[] y = f.apply(input).toFloatArray();
            double s = 0;
            for (int i = 0; i < y.length; i++) {
                s += (double) y[i] * r[i];
            }
            return s;
        }
    }
}
