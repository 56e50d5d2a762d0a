package org.ddp4j.nn.functional;

import java.util.Objects;
import org.ddp4j.internal.PoolNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * Differentiable 2-D max pooling, mirroring {@code torch.nn.functional.max_pool2d} with dilation 1
 * and {@code ceil_mode=False}. Padded positions count as -infinity; on ties the first maximum in
 * row-major order wins and NaN propagates, as PyTorch's CPU kernel. The backward sends each output
 * gradient to the position of its window's maximum (adding up where windows overlap).
 */
public final class MaxPool2dFunction {
    private MaxPool2dFunction() {}

    /**
     * Square kernel, same stride and padding in both dimensions.
     *
     * @see #apply(Tensor, int, int, int, int, int, int)
     */
    public static Tensor apply(Tensor x, int kernel, int stride, int padding) {
        return apply(x, kernel, kernel, stride, stride, padding, padding);
    }

    /**
     * Max over each window, recorded for autograd when x requires grad.
     *
     * @param x float32 [N, C, H, W]
     * @param kernelH window height (positive)
     * @param kernelW window width (positive)
     * @param strideH vertical stride (positive)
     * @param strideW horizontal stride (positive)
     * @param padH padding above and below, at most kernelH / 2
     * @param padW padding left and right, at most kernelW / 2
     * @return float32 [N, C, P, Q] with P = floor((H + 2 padH - kernelH) / strideH) + 1, likewise Q
     * @throws IllegalArgumentException if x is not a 4-D float32 tensor, the geometry is invalid, or
     *     the padded input is smaller than the window (the message names the input shape)
     */
    public static Tensor apply(Tensor x, int kernelH, int kernelW, int strideH, int strideW, int padH, int padW) {
        Objects.requireNonNull(x, "max_pool2d: input is null");
        long[] r = NativeResults.buffer();
        PoolNatives.maxPool2dForward(x.nativeHandle(), kernelH, kernelW, strideH, strideW, padH, padW, 1, 1, false, r);
        Tensor out = Tensor.fromNativeResult(r, 0);
        Tensor indices = Tensor.fromNativeResult(r, 1);
        long[] inputShape = x.shape();
        Node node = new Node("MaxPool2DWithIndicesBackward", x) {
            @Override
            protected Tensor[] backward(Tensor gradOutput) {
                return new Tensor[] {Tensor.fromNativeResult(PoolNatives.maxPool2dBackward(
                        gradOutput.nativeHandle(), indices.nativeHandle(), inputShape, NativeResults.buffer()))};
            }
        };
        node.attach(out);
        if (out.gradFn() != node) {
            indices.close();  // not recorded (no grad needed): the indices would only wait for the scope
        }
        return out;
    }
}
