package org.ddp4j.nn.functional;

import org.ddp4j.internal.LinearNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/** The differentiable rectifier {@code max(x, 0)}. Mirrors {@code torch.nn.functional.relu}. */
public final class ReluFunction {
    private ReluFunction() {}

    /**
     * Computes {@code max(x, 0)} elementwise (NaN stays NaN). The gradient passes where the output
     * is positive and is 0 elsewhere, including at 0, as in PyTorch.
     *
     * @param x float32 tensor of any shape
     * @return a new float32 tensor of x's shape, recording a "ReluBackward" node when x requires grad
     * @throws IllegalArgumentException if x is not float32
     */
    public static Tensor apply(Tensor x) {
        Tensor y = TensorHandles.fromNativeResult(LinearNatives.reluForward(TensorHandles.nativeHandle(x), NativeResults.buffer()));
        // The backward needs only the output (y > 0 ⇔ x > 0), as PyTorch's threshold_backward.
        return new Node("ReluBackward", x) {
            @Override
            protected Tensor[] backward(Tensor gy) {
                return new Tensor[] {TensorHandles.fromNativeResult(
                        LinearNatives.reluBackward(TensorHandles.nativeHandle(gy), TensorHandles.nativeHandle(y), NativeResults.buffer()))};
            }
        }.attach(y);
    }
}
