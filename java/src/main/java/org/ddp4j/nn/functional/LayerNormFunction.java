package org.ddp4j.nn.functional;

import java.util.Arrays;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.internal.TransformerNatives;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * The differentiable layer normalisation over the trailing dims, one fused native pass forward
 * (saving each row's mean and 1/std) and one backward (input, weight and bias gradients). Mirrors
 * {@code torch.nn.functional.layer_norm(x, normalized_shape, weight, bias, eps)}.
 */
public final class LayerNormFunction {
    private LayerNormFunction() {}

    /**
     * {@code (x - mean) / sqrt(var + eps) * weight + bias}, the mean and biased variance taken over
     * the trailing {@code normalizedShape.length} dims of each leading index.
     *
     * @param x float32 [*, normalizedShape...]
     * @param normalizedShape the trailing sizes of x to normalise over (at least one dim)
     * @param weight float32 of normalizedShape, or null for none
     * @param bias float32 of normalizedShape, or null for none
     * @param eps added to the variance (PyTorch's default 1e-5)
     * @return float32 of x's shape, recording a "LayerNormBackward" node when an argument requires grad
     * @throws IllegalArgumentException if x's trailing sizes differ from normalizedShape, or weight or
     *     bias has another shape (the message names the shapes)
     */
    public static Tensor apply(Tensor x, long[] normalizedShape, Tensor weight, Tensor bias, double eps) {
        long[] shape = x.shape();
        int dims = normalizedShape.length;
        if (dims == 0 || dims > shape.length
                || !Arrays.equals(normalizedShape, Arrays.copyOfRange(shape, shape.length - dims, shape.length))) {
            String norm = Arrays.toString(normalizedShape);
            throw new IllegalArgumentException("layer_norm: input " + Arrays.toString(shape)
                    + " does not end with normalized_shape " + norm + " (expected input of shape [*, "
                    + norm.substring(1) + ")");
        }
        long[] r = NativeResults.buffer();
        TransformerNatives.layerNormForward(TensorHandles.nativeHandle(x), dims, weight == null ? 0 : TensorHandles.nativeHandle(weight),
                bias == null ? 0 : TensorHandles.nativeHandle(bias), eps, r);
        Tensor y = TensorHandles.fromNativeResult(r, 0);
        Tensor mean = TensorHandles.fromNativeResult(r, 1);
        Tensor rstd = TensorHandles.fromNativeResult(r, 2);
        Node node = new Node("LayerNormBackward", x, weight, bias) {
            @Override
            protected Tensor[] backward(Tensor gy) {
                long[] g = NativeResults.buffer();
                TransformerNatives.layerNormBackward(TensorHandles.nativeHandle(gy), TensorHandles.nativeHandle(x), dims, TensorHandles.nativeHandle(mean),
                        TensorHandles.nativeHandle(rstd), weight == null ? 0 : TensorHandles.nativeHandle(weight), bias != null, g);
                Tensor gx = TensorHandles.fromNativeResult(g, 0);
                Tensor gw = TensorHandles.fromNativeResult(g, 1);
                Tensor gb = TensorHandles.fromNativeResult(g, 2);
                return new Tensor[] {gx, gw, gb};
            }
        };
        node.attach(y);
        if (y.gradFn() != node) {
            mean.close(); // no graph recorded: the statistics are not needed
            rstd.close();
        }
        return y;
    }
}
