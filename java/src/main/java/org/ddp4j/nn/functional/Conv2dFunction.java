package org.ddp4j.nn.functional;

import java.util.Objects;
import org.ddp4j.amp.Autocast;
import org.ddp4j.internal.ConvNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * Differentiable 2-D convolution (cross-correlation), mirroring {@code torch.nn.functional.conv2d}
 * with zero padding, any stride, dilation and groups. On CPUs with AVX-512, stride-1 convolutions
 * with groups 1, dilation 1 and at least 8 output channels run direct register-tiled kernels
 * (forward, input and weight gradients; no unfolding). Otherwise the CPU kernel multiplies with
 * BLAS GEMMs, one per group and chunk of images: 1x1 stride-1 unpadded convolutions read the
 * input as it is, others unfold it first (im2col); the backward computes the input gradient by
 * GEMM (+ col2im), the weight gradient by GEMM accumulated over the batch and the bias gradient
 * as a sum. Work is split over the intra-op threads so that results do not depend on their
 * number. {@code DDP4J_CONV_DIRECT=0} forces the GEMM path. Inside an {@link Autocast} scope the
 * GEMMs (forward and backward) multiply in bfloat16 / float16 with float32 accumulation, always on
 * the GEMM path; inputs, output and gradients stay float32.
 */
public final class Conv2dFunction {
    private Conv2dFunction() {}

    /**
     * Same stride and padding in both spatial dimensions, dilation 1, groups 1.
     *
     * @see #apply(Tensor, Tensor, Tensor, int, int, int, int, int, int, int)
     */
    public static Tensor apply(Tensor x, Tensor weight, Tensor bias, int stride, int padding) {
        return apply(x, weight, bias, stride, stride, padding, padding, 1, 1, 1);
    }

    /**
     * Dilation 1, groups 1.
     *
     * @see #apply(Tensor, Tensor, Tensor, int, int, int, int, int, int, int)
     */
    public static Tensor apply(Tensor x, Tensor weight, Tensor bias, int strideH, int strideW, int padH, int padW) {
        return apply(x, weight, bias, strideH, strideW, padH, padW, 1, 1, 1);
    }

    /**
     * y = conv2d(x, weight) + bias, recorded for autograd when any input requires grad.
     *
     * @param x float32 [N, C, H, W] (bfloat16 / float16 too inside an {@link Autocast} scope: widened)
     * @param weight float32 [K, C / groups, R, S] (likewise)
     * @param bias float32 [K], or null for no bias (likewise)
     * @param strideH vertical stride (positive)
     * @param strideW horizontal stride (positive)
     * @param padH zero padding added above and below (non-negative)
     * @param padW zero padding added left and right (non-negative)
     * @param dilationH vertical spacing between kernel taps (positive; 1 = dense)
     * @param dilationW horizontal spacing between kernel taps (positive)
     * @param groups number of channel groups (positive, divides C and K): output channels
     *     [g K/groups, (g+1) K/groups) see only input channels [g C/groups, (g+1) C/groups);
     *     groups = C is a depthwise convolution
     * @return float32 [N, K, P, Q] with P = floor((H + 2 padH - dilationH (R - 1) - 1) / strideH) + 1
     *     and likewise Q
     * @throws IllegalArgumentException if dtypes or dimensions are wrong, C differs from
     *     weight.size(1) * groups, K is not divisible by groups, bias does not have K elements, the
     *     geometry is invalid, or the padded input is smaller than the dilated kernel (messages name
     *     the shapes)
     * @throws IllegalStateException if an input is closed
     */
    public static Tensor apply(Tensor x, Tensor weight, Tensor bias, int strideH, int strideW, int padH, int padW,
            int dilationH, int dilationW, int groups) {
        Objects.requireNonNull(x, "conv2d: input is null");
        Objects.requireNonNull(weight, "conv2d: weight is null");
        // Autocast's dtype now, recorded for the backward (PyTorch's node keeps its forward's mode too).
        final DType compute = Autocast.computeDtype(x.device());
        final Tensor xc = compute == DType.FLOAT32 ? x : Autocast.widen(x);
        final Tensor wc = compute == DType.FLOAT32 ? weight : Autocast.widen(weight);
        final Tensor bc = compute == DType.FLOAT32 ? bias : Autocast.widen(bias);
        Tensor out = TensorHandles.fromNativeResult(ConvNatives.conv2dForward(TensorHandles.nativeHandle(xc), TensorHandles.nativeHandle(wc),
                bc == null ? 0 : TensorHandles.nativeHandle(bc), strideH, strideW, padH, padW, dilationH, dilationW, groups,
                compute.ordinal(), NativeResults.buffer()));
        return new Node("ConvolutionBackward", xc, wc, bc) {
            @Override
            protected Tensor[] backward(Tensor gradOutput) {
                long[] r = NativeResults.buffer();
                ConvNatives.conv2dBackward(TensorHandles.nativeHandle(gradOutput), TensorHandles.nativeHandle(xc), TensorHandles.nativeHandle(wc),
                        needsInputGrad(0), needsInputGrad(2), strideH, strideW, padH, padW, dilationH, dilationW,
                        groups, compute.ordinal(), r);
                return new Tensor[] {TensorHandles.fromNativeResult(r, 0), TensorHandles.fromNativeResult(r, 1),
                    TensorHandles.fromNativeResult(r, 2)};
            }
        }.attach(out);
    }
}
