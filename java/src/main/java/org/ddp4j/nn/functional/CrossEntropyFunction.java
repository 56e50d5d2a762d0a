package org.ddp4j.nn.functional;

import org.ddp4j.internal.LossNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.internal.TransformerNatives;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * The differentiable cross-entropy loss over class indices, with a fused, numerically stable
 * log-softmax. Mirrors {@code torch.nn.functional.cross_entropy(logits, target, reduction='mean')}
 * (without class weights or label smoothing; ignore_index through
 * {@link #apply(Tensor, Tensor, long)}).
 */
public final class CrossEntropyFunction {
    private CrossEntropyFunction() {}

    /**
     * Computes {@code mean_n(-log_softmax(logits[n])[target[n]])}. Finite for logits as large as
     * ±1e4 (the row maximum is subtracted before exponentiating).
     *
     * @param logits float32 [N, C] unnormalised scores
     * @param target int64 [N] class indices in [0, C); no gradient flows to it
     * @return a float32 scalar (shape []), recording a "CrossEntropyLossBackward" node; the node
     *     keeps the softmax probabilities [N, C] for the backward
     * @throws IllegalArgumentException on wrong dtypes or shapes (naming both shapes), or a target
     *     outside [0, C) (naming the value and C)
     */
    public static Tensor apply(Tensor logits, Tensor target) {
        long[] r = NativeResults.buffer();
        LossNatives.crossEntropyForward(TensorHandles.nativeHandle(logits), TensorHandles.nativeHandle(target), r);
        Tensor loss = TensorHandles.fromNativeResult(r, 0);
        Tensor probs = TensorHandles.fromNativeResult(r, 1);
        Node node = new Node("CrossEntropyLossBackward", logits) {
            @Override
            protected Tensor[] backward(Tensor gout) {
                return new Tensor[] {TensorHandles.fromNativeResult(LossNatives.crossEntropyBackward(
                        TensorHandles.nativeHandle(gout), TensorHandles.nativeHandle(probs), TensorHandles.nativeHandle(target), NativeResults.buffer()))};
            }
        };
        node.attach(loss);
        if (loss.gradFn() != node) {
            probs.close(); // no graph recorded (no grad needed, or noGrad): free the probabilities now
        }
        return loss;
    }

    /**
     * Computes {@code mean over n with target[n] != ignoreIndex of -log_softmax(logits[n])[target[n]]},
     * for large vocabularies (GPT-2's 50257 classes): the log-softmax is fused into the loss, the node
     * keeps only the logits (an input anyway) and each row's logsumexp [N], and the backward writes
     * {@code softmax - onehot} straight into the gradient, so no [N, C] probability tensor is kept.
     * Mirrors {@code F.cross_entropy(logits, target, ignore_index=ignoreIndex)}.
     *
     * @param logits float32 [N, C]
     * @param target int64 [N], each in [0, C) or equal to ignoreIndex (PyTorch's default is -100)
     * @param ignoreIndex the target value whose rows add nothing to the loss or the gradient
     * @return a float32 scalar (shape []); NaN when every target is ignored, as PyTorch's mean
     * @throws IllegalArgumentException on wrong dtypes or shapes, or a target outside [0, C) that is
     *     not ignoreIndex (naming the value and C)
     */
    public static Tensor apply(Tensor logits, Tensor target, long ignoreIndex) {
        long[] r = NativeResults.buffer();
        TransformerNatives.crossEntropyLseForward(TensorHandles.nativeHandle(logits), TensorHandles.nativeHandle(target), ignoreIndex, r);
        Tensor loss = TensorHandles.fromNativeResult(r, 0);
        Tensor lse = TensorHandles.fromNativeResult(r, 1);
        Node node = new Node("CrossEntropyLossBackward", logits) {
            @Override
            protected Tensor[] backward(Tensor gout) {
                return new Tensor[] {TensorHandles.fromNativeResult(TransformerNatives.crossEntropyLseBackward(TensorHandles.nativeHandle(gout),
                        TensorHandles.nativeHandle(logits), TensorHandles.nativeHandle(lse), TensorHandles.nativeHandle(target), ignoreIndex,
                        NativeResults.buffer()))};
            }
        };
        node.attach(loss);
        if (loss.gradFn() != node) {
            lse.close();
        }
        return loss;
    }
}
