package org.ddp4j.nn.functional;

import org.ddp4j.internal.LinearNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * The differentiable affine map {@code y = x · wᵀ + b}. Mirrors {@code torch.nn.functional.linear}
 * (forward by BLAS GEMM; backward computes the input, weight and bias gradients natively).
 */
public final class LinearFunction {
    private LinearFunction() {}

    /**
     * Computes {@code x · wᵀ + b}.
     *
     * @param x float32 input of shape [*, in] (usually [N, in])
     * @param w float32 weight [out, in]
     * @param b float32 bias [out], or null for none
     * @return float32 [*, out], recording a "LinearBackward" node when any argument requires grad
     * @throws IllegalArgumentException on wrong dtypes, ranks, devices or sizes; the message names
     *     both shapes, e.g. "linear: input [4, 3] has 3 features but weight [2, 5] expects 5"
     */
    public static Tensor apply(Tensor x, Tensor w, Tensor b) {
        Tensor y = Tensor.fromNativeResult(LinearNatives.linearForward(
                x.nativeHandle(), w.nativeHandle(), b == null ? 0 : b.nativeHandle(), NativeResults.buffer()));
        return new Node("LinearBackward", x, w, b) {
            @Override
            protected Tensor[] backward(Tensor gy) {
                boolean needGb = needsInputGrad(2);
                long[] r = NativeResults.buffer();
                LinearNatives.linearBackward(gy.nativeHandle(), x.nativeHandle(), w.nativeHandle(),
                        needsInputGrad(0), needGb, r);
                Tensor gx = Tensor.fromNativeResult(r, 0);
                Tensor gw = Tensor.fromNativeResult(r, 1);
                Tensor gb = Tensor.fromNativeResult(r, 2);
                if (!needsInputGrad(1)) {
                    // The native op always computes gw (it is cheap next to gx); drop it when unused.
                    gw.close();
                    gw = null;
                }
                return new Tensor[] {gx, gw, gb};
            }
        }.attach(y);
    }
}
