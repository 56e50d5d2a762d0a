package org.ddp4j.nn.functional;

import org.ddp4j.internal.LossNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * The differentiable mean squared error {@code mean((input - target)²)}. Mirrors
 * {@code torch.nn.functional.mse_loss(input, target, reduction='mean')}.
 */
public final class MSELossFunction {
    private MSELossFunction() {}

    /**
     * Computes the mean of the squared differences.
     *
     * @param input float32 tensor of any shape
     * @param target float32 tensor of the same shape (no broadcasting)
     * @return a float32 scalar (shape []), recording an "MseLossBackward" node; gradients flow to
     *     input and, when it requires grad, to target
     * @throws IllegalArgumentException if the dtypes are not float32 or the shapes differ (the
     *     message names both shapes)
     */
    public static Tensor apply(Tensor input, Tensor target) {
        Tensor out = TensorHandles.fromNativeResult(
                LossNatives.mseLossForward(TensorHandles.nativeHandle(input), TensorHandles.nativeHandle(target), NativeResults.buffer()));
        return new Node("MseLossBackward", input, target) {
            @Override
            protected Tensor[] backward(Tensor gout) {
                Tensor gin = TensorHandles.fromNativeResult(LossNatives.mseLossBackward(
                        TensorHandles.nativeHandle(gout), TensorHandles.nativeHandle(input), TensorHandles.nativeHandle(target), NativeResults.buffer()));
                Tensor gtarget = needsInputGrad(1) ? gin.mul(-1f) : null;
                if (!needsInputGrad(0)) {
                    gin.close();
                    gin = null;
                }
                return new Tensor[] {gin, gtarget};
            }
        }.attach(out);
    }
}
