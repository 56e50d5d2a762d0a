package org.ddp4j.tensor;

import org.ddp4j.internal.MatmulNatives;
import org.ddp4j.internal.NativeResults;

/** torch.matmul with its backward: the gradients are GEMMs with transposed operands (BLAS flags, no copies). */
final class MatmulOps {
    private MatmulOps() {}

    private static Tensor raw(Tensor a, Tensor b, boolean transA, boolean transB) {
        return Tensor.fromNativeResult(MatmulNatives.matmul(a.nativeHandle(), b.nativeHandle(), transA, transB,
                NativeResults.buffer()));
    }

    static Tensor matmul(Tensor a, Tensor b) {
        if (a.dim() == 0 || b.dim() == 0) {
            throw new IllegalArgumentException("matmul: both arguments need at least 1 dimension, got shapes "
                    + java.util.Arrays.toString(a.shape()) + " and " + java.util.Arrays.toString(b.shape()));
        }
        // 1-D operands as torch.matmul: a vector a is a row [1, k], a vector b a column [k, 1], and
        // that dimension is dropped from the result.
        Tensor a2 = a.dim() == 1 ? a.reshape(1, a.size(0)) : a;
        Tensor b2 = b.dim() == 1 ? b.reshape(b.size(0), 1) : b;
        Tensor out;
        if (a2.dim() > 2 && b2.dim() == 2) { // [..., m, k] · [k, n] as one GEMM over all rows of a
            long k = a2.size(-1);
            if (k != b2.size(0)) {
                throw new IllegalArgumentException("matmul: shapes " + java.util.Arrays.toString(a.shape()) + " and "
                        + java.util.Arrays.toString(b.shape()) + " cannot be multiplied: the last dimension of the first ("
                        + k + ") must equal the second-to-last of the second (" + b2.size(0) + ")");
            }
            long[] s = a2.shape();
            s[s.length - 1] = b2.size(1);
            out = product(a2.reshape(-1, k), b2).reshape(s);
        } else {
            out = product(a2, b2);
        }
        if (a.dim() > 1 && b.dim() > 1) {
            return out;
        }
        long[] s = out.shape();
        int drop = s.length - (b.dim() == 1 ? 1 : 2); // the column of a vector b, else the row of a vector a
        long[] result = new long[s.length - (a.dim() == 1 && b.dim() == 1 ? 2 : 1)];
        for (int i = 0, j = 0; i < s.length; i++) {
            boolean dropped = i == drop || (a.dim() == 1 && b.dim() == 1 && i == s.length - 2);
            if (!dropped) {
                result[j++] = s[i];
            }
        }
        return out.reshape(result);
    }

    /** a [..., m, k] · b [..., k, n], both at least 2-D, batch dims broadcast. */
    private static Tensor product(Tensor a, Tensor b) {
        Tensor out = raw(a, b, false, false);
        long[] sa = a.shape(), sb = b.shape();
        return new Node("MmBackward", a, b) {
            @Override
            protected Tensor[] backward(Tensor g) { // ga = g · bᵀ, gb = aᵀ · g, summed over broadcast batch dims
                return new Tensor[] {
                    needsInputGrad(0) ? BroadcastOps.sumTo(raw(g, b, false, true), sa) : null,
                    needsInputGrad(1) ? BroadcastOps.sumTo(raw(a, g, true, false), sb) : null};
            }
        }.attach(out);
    }
}
