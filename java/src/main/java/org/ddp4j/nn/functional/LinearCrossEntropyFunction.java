package org.ddp4j.nn.functional;

import org.ddp4j.amp.Autocast;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.internal.TransformerNatives;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * A language model's head fused with its loss: {@code cross_entropy(linear(h, w), target,
 * ignore_index)} without the [N, V] logits. The logits are made a block of rows at a time and
 * turned at once into the loss and, when a backward will need them, the gradients of h and w for
 * a grad_output of 1, which the node keeps ([N, C] and [V, C]) and scales by the actual
 * grad_output. So a GPT-2 step holds neither the logits nor their gradient (2 × N × 50,257
 * floats). The result equals the two calls' up to float32 rounding (w's gradient adds its row
 * blocks in order instead of in one GEMM). Inside an {@link Autocast} scope the GEMMs multiply in
 * its dtype, as {@link LinearFunction}'s. Liger-Kernel's fused linear cross entropy does the same
 * for PyTorch; PyTorch itself has no such call. The node scales its kept gradients in place: one
 * backward per forward.
 */
public final class LinearCrossEntropyFunction {
    private LinearCrossEntropyFunction() {}

    /**
     * @param h float32 [N, C], the hidden states
     * @param w float32 [V, C], the head's weight (as a {@code Linear(C, V, bias=false)}'s)
     * @param target int64 [N], each in [0, V) or equal to ignoreIndex; no gradient flows to it
     * @param ignoreIndex the target value whose rows add nothing to the loss or the gradients
     * @return a float32 scalar (shape []), the mean over the targets that are not ignored (NaN when
     *     all are), recording a "LinearCrossEntropyBackward" node when h or w requires grad
     * @throws IllegalArgumentException on wrong dtypes or shapes (naming them), or a target outside
     *     [0, V) that is not ignoreIndex (naming the value and V)
     */
    public static Tensor apply(Tensor h, Tensor w, Tensor target, long ignoreIndex) {
        final DType compute = Autocast.computeDtype(h.device());
        final Tensor hc = compute == DType.FLOAT32 ? h : Autocast.widen(h);
        final Tensor wc = compute == DType.FLOAT32 ? w : Autocast.widen(w);
        boolean grads = Tensors.isGradEnabled();
        boolean needGh = grads && hc.requiresGrad();
        boolean needGw = grads && wc.requiresGrad();
        long[] r = NativeResults.buffer();
        TransformerNatives.linearCrossEntropy(TensorHandles.nativeHandle(hc), TensorHandles.nativeHandle(wc), TensorHandles.nativeHandle(target), ignoreIndex,
                needGh, needGw, compute.ordinal(), r);
        Tensor loss = TensorHandles.fromNativeResult(r, 0);
        final Tensor gh = needGh ? TensorHandles.fromNativeResult(r, 1) : null;
        final Tensor gw = needGw ? TensorHandles.fromNativeResult(r, 2) : null;
        Node node = new Node("LinearCrossEntropyBackward", hc, wc) {
            @Override
            protected Tensor[] backward(Tensor gout) {
                float g = gout.item();
                return new Tensor[] {scaled(gh, g, needsInputGrad(0)), scaled(gw, g, needsInputGrad(1))};
            }
        };
        node.attach(loss);
        if (loss.gradFn() != node) { // no graph recorded: the gradients are not needed
            if (gh != null) {
                gh.close();
            }
            if (gw != null) {
                gw.close();
            }
        }
        return loss;
    }

    /** The kept gradient times grad_output (in place: the node runs its backward once), or null if not needed. */
    private static Tensor scaled(Tensor grad, float g, boolean needed) {
        if (grad == null || !needed) {
            return null;
        }
        return g == 1f ? grad : grad.mulInPlace(g);
    }
}
