package org.ddp4j.nn.functional;

import java.util.Objects;
import org.ddp4j.internal.PoolNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * Differentiable 2-D max pooling, mirroring {@code torch.nn.functional.max_pool2d}. Padded positions count as -infinity; on ties the first maximum in
 * row-major order wins and NaN propagates, as PyTorch's CPU kernel. The backward sends each output
 * gradient to the position of its window's maximum (adding up where windows overlap).
 */
public final class MaxPool2dFunction {
    private MaxPool2dFunction() {}

    /**
     * Square kernel, same stride and padding in both dimensions.
     *
     * @see #apply(Tensor, int, int, int, int, int, int, int, int, boolean)
     */
    public static Tensor apply(Tensor x, int kernel, int stride, int padding) {
        return apply(x, kernel, kernel, stride, stride, padding, padding);
    }

    /**
     * Dilation 1, floor mode.
     *
     * @see #apply(Tensor, int, int, int, int, int, int, int, int, boolean)
     */
    public static Tensor apply(Tensor x, int kernelH, int kernelW, int strideH, int strideW, int padH, int padW) {
        return apply(x, kernelH, kernelW, strideH, strideW, padH, padW, 1, 1, false);
    }

    /**
     * Max over each window, recorded for autograd when x requires grad. Window (p, q) takes rows
     * p·strideH - padH + k·dilationH for k in [0, kernelH), likewise columns.
     *
     * @param x float32 [N, C, H, W]
     * @param kernelH window height (positive)
     * @param kernelW window width (positive)
     * @param strideH vertical stride (positive)
     * @param strideW horizontal stride (positive)
     * @param padH padding above and below, at most kernelH / 2
     * @param padW padding left and right, at most kernelW / 2
     * @param dilationH vertical spacing of the window's taps (positive)
     * @param dilationW horizontal spacing of the window's taps (positive)
     * @param ceilMode round the output size up (PyTorch's {@code ceil_mode}); a last window that would
     *     start past the input and its left padding is dropped
     * @return float32 [N, C, P, Q] with P = floor((H + 2 padH - dilationH (kernelH - 1) - 1) / strideH) + 1
     *     (ceil with ceilMode), likewise Q
     * @throws IllegalArgumentException if x is not a 4-D float32 tensor, the geometry is invalid, or
     *     the padded input is too small for one window (the message names the input shape)
     */
    public static Tensor apply(Tensor x, int kernelH, int kernelW, int strideH, int strideW, int padH, int padW,
            int dilationH, int dilationW, boolean ceilMode) {
        Objects.requireNonNull(x, "max_pool2d: input is null");
        long[] r = NativeResults.buffer();
        PoolNatives.maxPool2dForward(TensorHandles.nativeHandle(x), kernelH, kernelW, strideH, strideW, padH, padW, dilationH, dilationW,
                ceilMode, r);
        Tensor out = TensorHandles.fromNativeResult(r, 0);
        Tensor indices = TensorHandles.fromNativeResult(r, 1);
        long[] inputShape = x.shape();
        Node node = new Node("MaxPool2DWithIndicesBackward", x) {
            @Override
            protected Tensor[] backward(Tensor gradOutput) {
                return new Tensor[] {TensorHandles.fromNativeResult(PoolNatives.maxPool2dBackward(
                        TensorHandles.nativeHandle(gradOutput), TensorHandles.nativeHandle(indices), inputShape, NativeResults.buffer()))};
            }
        };
        node.attach(out);
        if (out.gradFn() != node) {
            indices.close();  // not recorded (no grad needed): the indices would only wait for the scope
        }
        return out;
    }
}
