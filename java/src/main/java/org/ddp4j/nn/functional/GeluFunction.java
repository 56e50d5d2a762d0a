package org.ddp4j.nn.functional;

import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.internal.TransformerNatives;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/** The differentiable GELU. Mirrors {@code torch.nn.functional.gelu(x, approximate)}. */
public final class GeluFunction {
    private GeluFunction() {}

    /**
     * {@code x·Φ(x)} elementwise with the exact normal CDF ({@code "none"}: 0.5·x·(1 + erf(x/√2))) or
     * its tanh approximation ({@code "tanh"}: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), GPT-2's
     * "gelu_new").
     *
     * @param x float32 of any shape
     * @param approximate "none" or "tanh"
     * @return float32 of x's shape, recording a "GeluBackward" node when x requires grad
     * @throws IllegalArgumentException if approximate is another string or x is not float32
     */
    public static Tensor apply(Tensor x, String approximate) {
        final boolean tanh = isTanh(approximate);
        Tensor y = TensorHandles.fromNativeResult(TransformerNatives.geluForward(TensorHandles.nativeHandle(x), tanh, NativeResults.buffer()));
        return new Node("GeluBackward", x) {
            @Override
            protected Tensor[] backward(Tensor gy) {
                return new Tensor[] {TensorHandles.fromNativeResult(
                        TransformerNatives.geluBackward(TensorHandles.nativeHandle(gy), TensorHandles.nativeHandle(x), tanh, NativeResults.buffer()))};
            }
        }.attach(y);
    }

    /**
     * Whether approximate selects the tanh form.
     *
     * @throws IllegalArgumentException unless it is "none" or "tanh"
     */
    public static boolean isTanh(String approximate) {
        if ("tanh".equals(approximate)) {
            return true;
        }
        if ("none".equals(approximate)) {
            return false;
        }
        throw new IllegalArgumentException("gelu: approximate must be 'none' or 'tanh', got '" + approximate + "'");
    }
}
