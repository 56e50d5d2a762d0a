package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.amp.Autocast;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * addmm (a weight stored [in, out], read in place) gives what linear gives on the transposed
 * weight, forward and every gradient, in float32 and under bf16 autocast. The values are small
 * integers, so every product and sum is exact in both dtypes and the comparison is bit for bit
 * whatever order the GEMMs add in.
 */
class AddmmTest {
    private static float[] integers(int n, int seed) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = ((i * 7 + seed * 13) % 9) - 4;
        }
        return v;
    }

    @ParameterizedTest(name = "autocast bf16: {0}")
    @ValueSource(booleans = {false, true})
    void addmmEqualsLinearOnTheTransposedWeight(boolean bf16) {
        int rows = 2, t = 3, in = 5, out = 70; // out above a GEMM block, rows x t a 3-D input
        float[] xv = integers(rows * t * in, 1), wv = integers(in * out, 2), bv = integers(out, 3);
        float[] gyv = integers(rows * t * out, 4);
        float[][] viaAddmm = run(bf16, xv, wv, bv, gyv, rows, t, in, out, true);
        float[][] viaLinear = run(bf16, xv, wv, bv, gyv, rows, t, in, out, false);
        String[] names = {"y", "x.grad", "w.grad", "b.grad"};
        for (int i = 0; i < names.length; i++) {
            assertArrayEquals(viaLinear[i], viaAddmm[i], names[i]);
        }
        assertTrue(viaAddmm[2][0] != 0, "the weight's gradient is not trivially 0");
    }

    /** y, x.grad, w.grad ([in, out] layout) and b.grad of b + x · w with upstream gradient gy. */
    private static float[][] run(boolean bf16, float[] xv, float[] wv, float[] bv, float[] gyv, int rows, int t, int in,
            int out, boolean addmm) {
        try (var scope = Tensors.scope(); var ac = bf16 ? Autocast.enable(Device.CPU, DType.BFLOAT16) : null) {
            Tensor x = Tensor.of(xv, rows, t, in).requiresGrad(true);
            Tensor w = Tensor.of(wv, in, out).requiresGrad(true);
            Tensor b = Tensor.of(bv, out).requiresGrad(true);
            Tensor y = addmm ? Functional.addmm(b, x, w) : Functional.linear(x, w.transpose(0, 1), b);
            y.backward(Tensor.of(gyv, rows, t, out));
            return new float[][] {y.toFloatArray(), x.grad().toFloatArray(), w.grad().toFloatArray(),
                    b.grad().toFloatArray()};
        }
    }

    @Test
    void mismatchedShapesAreNamed() {
        try (var scope = Tensors.scope()) {
            var e = assertThrows(IllegalArgumentException.class,
                    () -> Functional.addmm(null, Tensor.zeros(4, 3), Tensor.zeros(5, 2)));
            assertTrue(e.getMessage().contains("addmm: input [4, 3] has 3 features but weight [5, 2] expects 5"), e.getMessage());
            var b = assertThrows(IllegalArgumentException.class,
                    () -> Functional.addmm(Tensor.zeros(3), Tensor.zeros(4, 5), Tensor.zeros(5, 2)));
            assertTrue(b.getMessage().contains("bias [3] does not match weight [5, 2] (expected [2])"), b.getMessage());
        }
    }
}
