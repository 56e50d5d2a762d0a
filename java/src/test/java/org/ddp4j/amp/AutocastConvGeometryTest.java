package org.ddp4j.amp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.nn.functional.Conv2dFunction;
import org.ddp4j.nn.functional.LinearFunction;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * What autocast computes, defined without it: conv2d and linear under Autocast (forward, input,
 * weight and bias gradients) equal the float32 ops on operands rounded with {@code to(dtype)}
 * (and, for the backward, the incoming gradient rounded too) up to float32 summation order:
 * |diff| <= 1e-5 of the largest value. At every conv plan the CPU kernel has (pointwise, unfolded,
 * strided, dilated, grouped, depthwise, batched thin outputs, a bias) and on both bfloat16 kernels
 * and float16. The rounding must make a difference here (else the test could not fail): the plain
 * float32 results differ from the rounded ones by more than the tolerance.
 */
class AutocastConvGeometryTest {
    private static Tensor randn(Generator g, long... shape) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        return Tensor.of(g.normal((int) n), shape);
    }

    private static Tensor rounded(Tensor t, DType d) {
        return t.to(d).to(DType.FLOAT32);
    }

    private static double maxAbsDiff(Tensor a, Tensor b) {
        float[] x = a.toFloatArray(), y = b.toFloatArray();
        assertEquals(x.length, y.length);
        double m = 0;
        for (int i = 0; i < x.length; i++) {
            m = Math.max(m, Math.abs((double) x[i] - y[i]));
        }
        return m;
    }

    private static double maxAbs(Tensor a) {
        double m = 0;
        for (float v : a.toFloatArray()) {
            m = Math.max(m, Math.abs(v));
        }
        return m;
    }

    // n, c, h, k, r, stride, pad, dilation, groups, bias, dtype, kernel
    @ParameterizedTest(name = "N{0} C{1} H{2} K{3} R{4} s{5} p{6} d{7} g{8} bias={9} {10} {11}")
    @CsvSource({
        "2, 8, 9, 16, 1, 1, 0, 1, 1, false, BFLOAT16, avx512bf16",
        "2, 8, 9, 16, 1, 1, 0, 1, 1, false, BFLOAT16, widen",
        "3, 5, 11, 7, 3, 1, 1, 1, 1, true, BFLOAT16, avx512bf16",
        "3, 5, 11, 7, 3, 2, 1, 1, 1, true, BFLOAT16, avx512bf16",
        "2, 6, 10, 6, 3, 1, 2, 2, 2, false, BFLOAT16, avx512bf16",
        "2, 8, 8, 8, 3, 1, 1, 1, 8, true, BFLOAT16, avx512bf16",
        "4, 16, 7, 24, 3, 1, 1, 1, 1, false, BFLOAT16, avx512bf16",
        "4, 16, 7, 24, 3, 1, 1, 1, 1, false, BFLOAT16, widen",
        "3, 5, 11, 7, 3, 2, 1, 1, 1, true, FLOAT16, widen",
        "4, 16, 7, 24, 3, 1, 1, 1, 1, false, FLOAT16, widen"})
    void convEqualsFloat32ConvOnRoundedOperands(int n, int c, int h, int k, int r, int stride, int pad, int dil,
            int groups, boolean hasBias, DType dtype, String kernel) {
        if (kernel.equals("avx512bf16") && !AmpNativesAccess.cpuHasBf16()) {
            org.junit.jupiter.api.Assumptions.abort("this CPU has no AVX512-BF16: the vdpbf16ps kernel cannot run");
        }
        AmpNativesAccess.force(kernel);
        Generator g = new Generator(7 + n * 31L + c + k);
        try (var scope = Tensors.scope()) {
            Tensor x = randn(g, n, c, h, h).requiresGrad(true);
            Tensor w = randn(g, k, c / groups, r, r).requiresGrad(true);
            Tensor b = hasBias ? randn(g, k).requiresGrad(true) : null;
            Tensor y;
            try (var ac = Autocast.enable(Device.CPU, dtype)) {
                y = Conv2dFunction.apply(x, w, b, stride, stride, pad, pad, dil, dil, groups);
            }
            Tensor gy = randn(g, y.shape());
            y.backward(gy);
            // The definition: float32 ops on rounded operands; the backward's products use the rounded gy.
            Tensor xr = rounded(x.detach(), dtype).requiresGrad(true);
            Tensor wr = rounded(w.detach(), dtype).requiresGrad(true);
            Tensor br = hasBias ? b.detach().requiresGrad(true) : null;
            Tensor yr = Conv2dFunction.apply(xr, wr, br, stride, stride, pad, pad, dil, dil, groups);
            yr.backward(rounded(gy, dtype));
            double tol = 1e-5;
            assertTrue(maxAbsDiff(y, yr) <= tol * maxAbs(yr), "output: " + maxAbsDiff(y, yr));
            assertTrue(maxAbsDiff(x.grad(), xr.grad()) <= tol * maxAbs(xr.grad()), "grad x: " + maxAbsDiff(x.grad(), xr.grad()));
            assertTrue(maxAbsDiff(w.grad(), wr.grad()) <= tol * maxAbs(wr.grad()), "grad w: " + maxAbsDiff(w.grad(), wr.grad()));
            if (hasBias) {  // the bias gradient sums the float32 gy, unrounded
                Tensor bp = b.detach().requiresGrad(true);
                Conv2dFunction.apply(x.detach(), w.detach(), bp, stride, stride, pad, pad, dil, dil, groups).backward(gy);
                assertTrue(maxAbsDiff(b.grad(), bp.grad()) <= tol * maxAbs(bp.grad()), "grad b");
            }
            // Without rounding the results differ by more: the comparison above can fail.
            Tensor plain = Conv2dFunction.apply(x.detach(), w.detach(), hasBias ? b.detach() : null, stride, stride, pad,
                    pad, dil, dil, groups);
            assertTrue(maxAbsDiff(plain, yr) > 10 * tol * maxAbs(yr), "rounding changed nothing?");
        } finally {
            AmpNativesAccess.reset();
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"BFLOAT16, avx512bf16", "BFLOAT16, widen", "FLOAT16, widen"})
    void linearEqualsFloat32LinearOnRoundedOperands(DType dtype, String kernel) {
        if (kernel.equals("avx512bf16") && !AmpNativesAccess.cpuHasBf16()) {
            org.junit.jupiter.api.Assumptions.abort("this CPU has no AVX512-BF16: the vdpbf16ps kernel cannot run");
        }
        AmpNativesAccess.force(kernel);
        Generator g = new Generator(99);
        try (var scope = Tensors.scope()) {
            Tensor x = randn(g, 37, 70).requiresGrad(true);
            Tensor w = randn(g, 29, 70).requiresGrad(true);
            Tensor b = randn(g, 29).requiresGrad(true);
            Tensor y;
            try (var ac = Autocast.enable(Device.CPU, dtype)) {
                y = LinearFunction.apply(x, w, b);
            }
            Tensor gy = randn(g, 37, 29);
            y.backward(gy);
            Tensor xr = rounded(x.detach(), dtype).requiresGrad(true);
            Tensor wr = rounded(w.detach(), dtype).requiresGrad(true);
            Tensor yr = LinearFunction.apply(xr, wr, b.detach());
            yr.backward(rounded(gy, dtype));
            assertTrue(maxAbsDiff(y, yr) <= 1e-5 * maxAbs(yr), "output");
            assertTrue(maxAbsDiff(x.grad(), xr.grad()) <= 1e-5 * maxAbs(xr.grad()), "grad x");
            assertTrue(maxAbsDiff(w.grad(), wr.grad()) <= 1e-5 * maxAbs(wr.grad()), "grad w");
        } finally {
            AmpNativesAccess.reset();
        }
    }
}
