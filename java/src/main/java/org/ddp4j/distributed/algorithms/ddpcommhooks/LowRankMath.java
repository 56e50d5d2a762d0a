package org.ddp4j.distributed.algorithms.ddpcommhooks;

import org.ddp4j.amp.Autocast;
import org.ddp4j.internal.LinearNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.nn.functional.LinearFunction;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * PowerSGD's matrix products on the native GEMM (the linear layer's kernels: BLAS on the CPU,
 * cuBLAS-style kernels on a GPU) and the orthogonalisation of the thin factors. All
 * matrices are float32 and row-major; P is [n, r], Q is [m, r], M is [n, m] with r small.
 */
final class LowRankMath {
    private LowRankMath() {}

    /** A scope with autocast off on m's device: PowerSGD multiplies in float32 even when a hook runs inside autocast. */
    private static Autocast float32Only(Tensor m) {
        return Autocast.enable(m.device(), DType.BFLOAT16, false);
    }

    /** P[n, r] = M[n, m] · Q[m, r], written into {@code p}. (torch.bmm(M, Q, out=P).) */
    static void mq(Tensor m, Tensor q, Tensor p) {
        try (var ng = Tensors.noGrad(); var scope = Tensors.scope(); var fp32 = float32Only(m)) {
            // linear computes x · wᵀ: w must be Qᵀ [r, m]; Q is thin, so transposing it is cheap.
            Tensor qt = transpose(q);
            p.copyFrom(LinearFunction.apply(m, qt, null));
        }
    }

    /** Q[m, r] = M[n, m]ᵀ · P[n, r], written into {@code q}. (torch.bmm(M.transpose(1, 2), P, out=Q).) */
    static void mtp(Tensor m, Tensor p, Tensor q) {
        try (var ng = Tensors.noGrad(); var scope = Tensors.scope()) {
            // The linear backward's weight gradient is gyᵀ · x = Pᵀ · M = Qᵀ [r, m], with no copy of M.
            long r = p.size(1);
            Tensor shapeOfW = Tensor.zeros(r, m.size(1)); // only its shape is read (no input gradient asked)
            long[] results = NativeResults.buffer();
            LinearNatives.linearBackward(TensorHandles.nativeHandle(p), TensorHandles.nativeHandle(m), TensorHandles.nativeHandle(shapeOfW), false, false,
                    DType.FLOAT32.ordinal(), results); // float32 whatever autocast says: the factors need the precision
            Tensor qt = TensorHandles.fromNativeResult(results, 1);
            q.copyFrom(transpose(qt));
        }
    }

    /** M[n, m] = P[n, r] · Q[m, r]ᵀ, written into {@code m}. (torch.bmm(P, Q.transpose(1, 2), out=M).) */
    static void pqt(Tensor p, Tensor q, Tensor m) {
        try (var ng = Tensors.noGrad(); var scope = Tensors.scope(); var fp32 = float32Only(m)) {
            m.copyFrom(LinearFunction.apply(p, q, null));
        }
    }

    /** The transpose of a 2-D tensor, as a new contiguous tensor (in the current scope). */
    static Tensor transpose(Tensor a) {
        int rows = (int) a.size(0), cols = (int) a.size(1);
        float[] x = a.toFloatArray();
        float[] y = new float[x.length];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                y[j * rows + i] = x[i * cols + j];
            }
        }
        return Tensor.of(y, cols, rows).to(a.device());
    }

    /**
     * Orthonormalises the columns of {@code a} [rows, cols] (rows &ge; cols) in place, as PyTorch's
     * {@code _orthogonalize}: Gram–Schmidt up to 2 columns ({@link #gramSchmidt}), above that the Q
     * of a QR factorisation ({@link #householderQ}, torch.linalg.qr's), which stays orthonormal
     * when the columns are nearly dependent (a gradient of lower rank than r), where Gram–Schmidt
     * does not. {@code epsilon} applies to Gram–Schmidt only, as in PyTorch.
     */
    static void orthogonalize(Tensor a, float epsilon) {
        int rows = (int) a.size(0), cols = (int) a.size(1);
        float[] x = a.toFloatArray();
        if (cols <= 2) {
            gramSchmidt(x, rows, cols, epsilon);
        } else {
            householderQ(x, rows, cols);
        }
        try (Tensor t = Tensor.of(x, rows, cols); Tensor d = t.to(a.device())) {
            a.copyFrom(d);
        }
    }

    /**
     * Replaces x [rows, cols] (row-major, rows &ge; cols) by the Q of its thin QR factorisation, by
     * Householder reflections in LAPACK's convention (geqrf's reflectors, beta = -sign(alpha) ||x||,
     * then orgqr's Q = H_0 ... H_{cols-1} I), so the columns have the signs torch.linalg.qr gives.
     * A column already zero below the diagonal gets no reflection (tau = 0), as in LAPACK. In double.
     */
    static void householderQ(float[] x, int rows, int cols) {
        double[] a = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            a[i] = x[i];
        }
        double[][] v = new double[cols][];
        double[] tau = new double[cols];
        for (int j = 0; j < cols; j++) {
            double alpha = a[j * cols + j];
            double below = 0;
            for (int i = j + 1; i < rows; i++) {
                below += a[i * cols + j] * a[i * cols + j];
            }
            double[] vj = new double[rows - j];
            vj[0] = 1;
            v[j] = vj;
            if (below == 0) {
                continue;
            }
            double beta = -Math.copySign(Math.sqrt(alpha * alpha + below), alpha);
            tau[j] = (beta - alpha) / beta;
            for (int i = j + 1; i < rows; i++) {
                vj[i - j] = a[i * cols + j] / (alpha - beta);
            }
            reflect(a, rows, cols, j, vj, tau[j], j + 1);
        }
        double[] q = new double[x.length];
        for (int j = 0; j < cols; j++) {
            q[j * cols + j] = 1;
        }
        for (int j = cols - 1; j >= 0; j--) {
            if (tau[j] != 0) {
                reflect(q, rows, cols, j, v[j], tau[j], 0);
            }
        }
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) q[i];
        }
    }

    /** Applies H = I - tau v vᵀ (v over rows j..rows-1) from the left to columns from..cols-1 of a. */
    private static void reflect(double[] a, int rows, int cols, int j, double[] v, double tau, int from) {
        for (int c = from; c < cols; c++) {
            double dot = 0;
            for (int i = j; i < rows; i++) {
                dot += v[i - j] * a[i * cols + c];
            }
            dot *= tau;
            for (int i = j; i < rows; i++) {
                a[i * cols + c] -= dot * v[i - j];
            }
        }
    }

    /**
     * Orthonormalises the columns of x [rows, cols] in place by Gram–Schmidt, as PyTorch's
     * {@code _orthogonalize_gram_schmidt}: each column divided by its norm (plus {@code epsilon}
     * when it is not zero), then its projection removed from the columns after it. A zero column
     * with epsilon 0 gives NaN, as in PyTorch (set a small epsilon such as 1e-8 to avoid it).
     */
    static void gramSchmidt(float[] x, int rows, int cols, float epsilon) {
        for (int i = 0; i < cols; i++) {
            double sq = 0;
            for (int k = 0; k < rows; k++) {
                sq += (double) x[k * cols + i] * x[k * cols + i];
            }
            float norm = (float) Math.sqrt(sq);
            float div = epsilon == 0f ? norm : norm + epsilon;
            for (int k = 0; k < rows; k++) {
                x[k * cols + i] /= div;
            }
            for (int j = i + 1; j < cols; j++) {
                double dot = 0;
                for (int k = 0; k < rows; k++) {
                    dot += (double) x[k * cols + i] * x[k * cols + j];
                }
                float d = (float) dot;
                for (int k = 0; k < rows; k++) {
                    x[k * cols + j] -= d * x[k * cols + i];
                }
            }
        }
    }
}
