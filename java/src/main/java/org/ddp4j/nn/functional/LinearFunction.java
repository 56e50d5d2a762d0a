package org.ddp4j.nn.functional;

import org.ddp4j.amp.Autocast;
import org.ddp4j.internal.LinearNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * The differentiable affine map {@code y = x · wᵀ + b}. Mirrors {@code torch.nn.functional.linear}
 * (forward by BLAS GEMM; backward computes the input, weight and bias gradients natively). Inside an
 * {@link Autocast} scope its GEMMs multiply in bfloat16 / float16 with float32 accumulation; inputs,
 * output and gradients stay float32.
 */
public final class LinearFunction {
    private LinearFunction() {}

    /**
     * Computes {@code x · wᵀ + b}.
     *
     * @param x float32 input of shape [*, in] (usually [N, in]); inside an {@link Autocast} scope x, w
     *     and b may also be bfloat16 / float16 (widened, differentiably)
     * @param w float32 weight [out, in]
     * @param b float32 bias [out], or null for none
     * @return float32 [*, out], recording a "LinearBackward" node when any argument requires grad
     * @throws IllegalArgumentException on wrong dtypes, ranks, devices or sizes; the message names
     *     both shapes, e.g. "linear: input [4, 3] has 3 features but weight [2, 5] expects 5"
     */
    public static Tensor apply(Tensor x, Tensor w, Tensor b) {
        return apply(x, w, b, false);
    }

    /**
     * Computes {@code b + x · w} for a weight stored [in, out], read in place (no transposed copy).
     * Mirrors {@code torch.addmm(b, x, w)}, which Hugging Face's {@code Conv1D} calls on its input
     * viewed as [N, in]; here x may keep its leading dims, [*, in] → [*, out].
     *
     * @param x float32 input [*, in] (autocast as {@link #apply(Tensor, Tensor, Tensor)})
     * @param w float32 weight [in, out]
     * @param b float32 bias [out], or null for none
     * @return float32 [*, out], recording an "AddmmBackward" node when any argument requires grad
     * @throws IllegalArgumentException on wrong dtypes, ranks, devices or sizes, naming the shapes
     */
    public static Tensor applyToInOutWeight(Tensor x, Tensor w, Tensor b) {
        return apply(x, w, b, true);
    }

    private static Tensor apply(Tensor x, Tensor w, Tensor b, boolean wInOut) {
        // Autocast's dtype now, recorded for the backward (PyTorch's node keeps its forward's mode too).
        final DType compute = Autocast.computeDtype(x.device());
        final Tensor xc = compute == DType.FLOAT32 ? x : Autocast.widen(x);
        final Tensor wc = compute == DType.FLOAT32 ? w : Autocast.widen(w);
        final Tensor bc = compute == DType.FLOAT32 ? b : Autocast.widen(b);
        long bias = bc == null ? 0 : TensorHandles.nativeHandle(bc);
        Tensor y = TensorHandles.fromNativeResult(wInOut
                ? LinearNatives.addmmForward(bias, TensorHandles.nativeHandle(xc), TensorHandles.nativeHandle(wc), compute.ordinal(), NativeResults.buffer())
                : LinearNatives.linearForward(TensorHandles.nativeHandle(xc), TensorHandles.nativeHandle(wc), bias, compute.ordinal(), NativeResults.buffer()));
        return new Node(wInOut ? "AddmmBackward" : "LinearBackward", xc, wc, bc) {
            @Override
            protected Tensor[] backward(Tensor gy) {
                boolean needGb = needsInputGrad(2);
                long[] r = NativeResults.buffer();
                if (wInOut) {
                    LinearNatives.addmmBackward(TensorHandles.nativeHandle(gy), TensorHandles.nativeHandle(xc), TensorHandles.nativeHandle(wc),
                            needsInputGrad(0), needGb, compute.ordinal(), r);
                } else {
                    LinearNatives.linearBackward(TensorHandles.nativeHandle(gy), TensorHandles.nativeHandle(xc), TensorHandles.nativeHandle(wc),
                            needsInputGrad(0), needGb, compute.ordinal(), r);
                }
                Tensor gx = TensorHandles.fromNativeResult(r, 0);
                Tensor gw = TensorHandles.fromNativeResult(r, 1);
                Tensor gb = TensorHandles.fromNativeResult(r, 2);
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
