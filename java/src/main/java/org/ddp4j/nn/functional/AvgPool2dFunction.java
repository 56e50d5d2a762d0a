package org.ddp4j.nn.functional;

import java.util.Objects;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.PoolNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * Differentiable 2-D average pooling, mirroring {@code torch.nn.functional.avg_pool2d}. Each output
 * is its window's sum divided by divisorOverride when given, else by the window's size clipped to
 * the padded input ({@code countIncludePad}, PyTorch's default) or to the input alone. The backward
 * spreads each output gradient over its window with the same divisor, adding up where windows overlap.
 */
public final class AvgPool2dFunction {
    private AvgPool2dFunction() {}

    /**
     * Square kernel, same stride and padding in both dimensions, floor mode, padding counted, no
     * divisor override (PyTorch's defaults).
     *
     * @see #apply(Tensor, int, int, int, int, int, int, boolean, boolean, Integer)
     */
    public static Tensor apply(Tensor x, int kernel, int stride, int padding) {
        return apply(x, kernel, kernel, stride, stride, padding, padding, false, true, null);
    }

    /**
     * Mean over each window, recorded for autograd when x requires grad. Window (p, q) covers rows
     * [p·strideH - padH, p·strideH - padH + kernelH), likewise columns.
     *
     * @param x float32 [N, C, H, W]
     * @param kernelH window height (positive)
     * @param kernelW window width (positive)
     * @param strideH vertical stride (positive)
     * @param strideW horizontal stride (positive)
     * @param padH zero padding above and below, at most kernelH / 2
     * @param padW zero padding left and right, at most kernelW / 2
     * @param ceilMode round the output size up (PyTorch's {@code ceil_mode}); a last window that would
     *     start past the input and its left padding is dropped
     * @param countIncludePad whether padded positions count in the divisor
     * @param divisorOverride the divisor of every window (positive), or null for the window's size
     * @return float32 [N, C, P, Q] with P = floor((H + 2 padH - kernelH) / strideH) + 1 (ceil with
     *     ceilMode), likewise Q
     * @throws IllegalArgumentException if x is not a 4-D float32 tensor, the geometry is invalid,
     *     divisorOverride is not positive, or the padded input is too small for one window (the
     *     message names the input shape)
     */
    public static Tensor apply(Tensor x, int kernelH, int kernelW, int strideH, int strideW, int padH, int padW,
            boolean ceilMode, boolean countIncludePad, Integer divisorOverride) {
        Objects.requireNonNull(x, "avg_pool2d: input is null");
        if (divisorOverride != null && divisorOverride <= 0) {
            throw new IllegalArgumentException("avg_pool2d: divisor_override must be positive (or null for none), got "
                    + divisorOverride);
        }
        long divisor = divisorOverride == null ? 0 : divisorOverride;
        Tensor out = TensorHandles.fromNativeResult(PoolNatives.avgPool2dForward(TensorHandles.nativeHandle(x), kernelH, kernelW, strideH,
                strideW, padH, padW, ceilMode, countIncludePad, divisor, NativeResults.buffer()));
        long[] inputShape = x.shape();
        return new Node("AvgPool2DBackward", x) {
            @Override
            protected Tensor[] backward(Tensor gradOutput) {
                return new Tensor[] {TensorHandles.fromNativeResult(PoolNatives.avgPool2dBackward(TensorHandles.nativeHandle(gradOutput),
                        inputShape, kernelH, kernelW, strideH, strideW, padH, padW, ceilMode, countIncludePad, divisor,
                        NativeResults.buffer()))};
            }
        }.attach(out);
    }
}
