package org.ddp4j.nn.functional;

import java.util.Objects;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.PoolNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * Differentiable adaptive average pooling, mirroring
 * {@code torch.nn.functional.adaptive_avg_pool2d}: output row p of P averages input rows
 * [floor(p·H/P), ceil((p+1)·H/P)), likewise columns, so any H×W input gives exactly P×Q (windows
 * may overlap or, for P > H, repeat rows). The backward spreads each output gradient evenly over its
 * window, adding up where windows overlap.
 */
public final class AdaptiveAvgPool2dFunction {
    private AdaptiveAvgPool2dFunction() {}

    /**
     * Averages each adaptive window, recorded for autograd when x requires grad.
     *
     * @param x float32 [N, C, H, W] with H, W ≥ 1
     * @param outH output height (positive)
     * @param outW output width (positive)
     * @return float32 [N, C, outH, outW]
     * @throws IllegalArgumentException if x is not a 4-D float32 tensor with non-empty planes or an
     *     output size is not positive (the message names the shape)
     */
    public static Tensor apply(Tensor x, long outH, long outW) {
        Objects.requireNonNull(x, "adaptive_avg_pool2d: input is null");
        Tensor out = TensorHandles.fromNativeResult(
                PoolNatives.adaptiveAvgPool2dForward(TensorHandles.nativeHandle(x), outH, outW, NativeResults.buffer()));
        long[] inputShape = x.shape();
        return new Node("AdaptiveAvgPool2DBackward", x) {
            @Override
            protected Tensor[] backward(Tensor gradOutput) {
                return new Tensor[] {TensorHandles.fromNativeResult(PoolNatives.adaptiveAvgPool2dBackward(
                        TensorHandles.nativeHandle(gradOutput), inputShape, NativeResults.buffer()))};
            }
        }.attach(out);
    }
}
