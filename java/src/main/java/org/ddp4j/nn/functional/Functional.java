package org.ddp4j.nn.functional;

import org.ddp4j.tensor.Tensor;

/**
 * Stateless differentiable functions, one static method per op: PyTorch's
 * {@code torch.nn.functional}. Each delegates to the op's class in this package, whose Javadoc
 * gives the details.
 */
public final class Functional {
    private Functional() {}

    /**
     * {@code x · wᵀ + b}: x float32 [*, in], w [out, in], b [out] or null → [*, out]. Mirrors
     * {@code F.linear}.
     *
     * @throws IllegalArgumentException on mismatched shapes (message names both shapes)
     */
    public static Tensor linear(Tensor x, Tensor w, Tensor b) {
        return LinearFunction.apply(x, w, b);
    }

    /** {@code x · wᵀ} without bias. Mirrors {@code F.linear(x, w)}. */
    public static Tensor linear(Tensor x, Tensor w) {
        return LinearFunction.apply(x, w, null);
    }

    /**
     * {@code b + x · w} for x [*, in], a weight w stored [in, out] (read in place) and b [out] or
     * null: float32 [*, out]. Mirrors {@code torch.addmm(b, x, w)} (which takes x as [N, in]), as
     * Hugging Face's {@code Conv1D} calls it; see {@link LinearFunction#applyToInOutWeight}.
     *
     * @throws IllegalArgumentException on wrong dtypes, ranks, devices or sizes, naming the shapes
     */
    public static Tensor addmm(Tensor b, Tensor x, Tensor w) {
        return LinearFunction.applyToInOutWeight(x, w, b);
    }

    /** {@code max(x, 0)} elementwise, float32 of x's shape. Mirrors {@code F.relu}. */
    public static Tensor relu(Tensor x) {
        return ReluFunction.apply(x);
    }

    /**
     * Dropout with probability p in training, the identity otherwise; the mask is drawn from
     * generator. Mirrors {@code F.dropout(x, p, training)}; see {@link DropoutFunction#apply}.
     *
     * @throws IllegalArgumentException if p is outside [0, 1]
     */
    public static Tensor dropout(Tensor x, double p, boolean training, org.ddp4j.tensor.Generator generator) {
        return DropoutFunction.apply(x, p, training, generator);
    }

    /**
     * Mean squared error of two float32 tensors of the same shape, a scalar. Mirrors
     * {@code F.mse_loss}.
     *
     * @throws IllegalArgumentException if the shapes differ
     */
    public static Tensor mseLoss(Tensor input, Tensor target) {
        return MSELossFunction.apply(input, target);
    }

    /**
     * Mean cross entropy of float32 logits [N, C] against int64 class indices [N], a scalar.
     * Mirrors {@code F.cross_entropy}.
     *
     * @throws IllegalArgumentException on mismatched shapes or a target outside [0, C)
     */
    public static Tensor crossEntropy(Tensor logits, Tensor target) {
        return CrossEntropyFunction.apply(logits, target);
    }

    /**
     * 2-D convolution: x [N, C, H, W], w [K, C, R, S], b [K] or null → [N, K, P, Q]. Mirrors
     * {@code torch.nn.functional.conv2d(x, w, b, stride, padding)}.
     *
     * @throws IllegalArgumentException on mismatched channels or a too-small input (both shapes named)
     */
    public static Tensor conv2d(Tensor x, Tensor w, Tensor b, int stride, int padding) {
        return Conv2dFunction.apply(x, w, b, stride, padding);
    }

    /**
     * 2-D convolution with dilation and groups: x [N, C, H, W], w [K, C / groups, R, S], b [K] or
     * null → [N, K, P, Q]. Mirrors {@code torch.nn.functional.conv2d(x, w, b, stride, padding,
     * dilation, groups)}.
     *
     * @throws IllegalArgumentException on channels that do not match weight.size(1) * groups, K not
     *     divisible by groups, or a too-small input (shapes named)
     */
    public static Tensor conv2d(Tensor x, Tensor w, Tensor b, int stride, int padding, int dilation, int groups) {
        return Conv2dFunction.apply(x, w, b, stride, stride, padding, padding, dilation, dilation, groups);
    }

    /**
     * Batch normalisation over [N, C, H, W] per channel; in training, batch statistics and a
     * running-stat update. Mirrors {@code torch.nn.functional.batch_norm}.
     */
    public static Tensor batchNorm2d(Tensor x, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
            boolean training, double momentum, double eps) {
        return BatchNorm2dFunction.apply(x, weight, bias, runningMean, runningVar, training, momentum, eps);
    }

    /** Max pooling over [N, C, H, W]. Mirrors {@code torch.nn.functional.max_pool2d(x, kernel, stride, padding)}. */
    public static Tensor maxPool2d(Tensor x, int kernel, int stride, int padding) {
        return MaxPool2dFunction.apply(x, kernel, stride, padding);
    }

    /**
     * Max pooling with dilation and ceil mode. Mirrors {@code torch.nn.functional.max_pool2d(x, kernel,
     * stride, padding, dilation, ceil_mode)}; see {@link MaxPool2dFunction#apply(Tensor, int, int, int, int, int, int, int, int, boolean)}.
     */
    public static Tensor maxPool2d(Tensor x, int kernel, int stride, int padding, int dilation, boolean ceilMode) {
        return MaxPool2dFunction.apply(x, kernel, kernel, stride, stride, padding, padding, dilation, dilation, ceilMode);
    }

    /** Average pooling over [N, C, H, W]. Mirrors {@code torch.nn.functional.avg_pool2d(x, kernel, stride, padding)}. */
    public static Tensor avgPool2d(Tensor x, int kernel, int stride, int padding) {
        return AvgPool2dFunction.apply(x, kernel, stride, padding);
    }

    /**
     * Average pooling with every option. Mirrors {@code torch.nn.functional.avg_pool2d(x, kernel, stride,
     * padding, ceil_mode, count_include_pad, divisor_override)}; divisorOverride may be null.
     */
    public static Tensor avgPool2d(Tensor x, int kernel, int stride, int padding, boolean ceilMode,
            boolean countIncludePad, Integer divisorOverride) {
        return AvgPool2dFunction.apply(x, kernel, kernel, stride, stride, padding, padding, ceilMode, countIncludePad,
                divisorOverride);
    }

    /**
     * Adaptive average pooling of [N, C, H, W] to [N, C, outH, outW]. Mirrors
     * {@code torch.nn.functional.adaptive_avg_pool2d(x, (outH, outW))}.
     */
    public static Tensor adaptiveAvgPool2d(Tensor x, int outH, int outW) {
        return AdaptiveAvgPool2dFunction.apply(x, outH, outW);
    }

    /**
     * Rows of weight [V, D] picked by int64 indices of any shape → float32 [*input.shape, D]; the
     * row paddingIdx (null: none) gets no gradient. Mirrors {@code F.embedding(input, weight,
     * padding_idx)}; see {@link EmbeddingFunction#apply}.
     *
     * @throws IllegalArgumentException on an index outside [0, V) (naming it and V) or wrong dtypes
     */
    public static Tensor embedding(Tensor input, Tensor weight, Long paddingIdx) {
        return EmbeddingFunction.apply(input, weight, paddingIdx);
    }

    /**
     * Layer normalisation over the trailing dims normalizedShape of x, with optional weight and bias
     * (null: none). Mirrors {@code F.layer_norm(x, normalized_shape, weight, bias, eps)}; see
     * {@link LayerNormFunction#apply}.
     *
     * @throws IllegalArgumentException if x does not end with normalizedShape or weight / bias differ from it
     */
    public static Tensor layerNorm(Tensor x, long[] normalizedShape, Tensor weight, Tensor bias, double eps) {
        return LayerNormFunction.apply(x, normalizedShape, weight, bias, eps);
    }

    /**
     * GELU elementwise, exact ("none") or tanh-approximated ("tanh"). Mirrors
     * {@code F.gelu(x, approximate)}.
     *
     * @throws IllegalArgumentException for another approximate
     */
    public static Tensor gelu(Tensor x, String approximate) {
        return GeluFunction.apply(x, approximate);
    }

    /** The exact GELU. Mirrors {@code F.gelu(x)}. */
    public static Tensor gelu(Tensor x) {
        return GeluFunction.apply(x, "none");
    }

    /**
     * Fused attention {@code dropout(softmax(q·kᵀ·scale + attnMask)) · v} for q [..., L, E], k [..., S, E],
     * v [..., S, Ev] → [..., L, Ev], never holding an [L, S] matrix. Mirrors
     * {@code F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale)}; see
     * {@link ScaledDotProductAttentionFunction#apply} for the mask, dropout and causal rules.
     *
     * @throws IllegalArgumentException on mismatched shapes, a mask that does not broadcast or p outside [0, 1]
     */
    public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP,
            boolean isCausal, Double scale, org.ddp4j.tensor.Generator generator) {
        return ScaledDotProductAttentionFunction.apply(q, k, v, attnMask, dropoutP, isCausal, scale, generator);
    }

    /** Attention without mask or dropout, scale 1/√E. Mirrors {@code F.scaled_dot_product_attention(q, k, v, is_causal=isCausal)}. */
    public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, boolean isCausal) {
        return ScaledDotProductAttentionFunction.apply(q, k, v, null, 0, isCausal, null, null);
    }

    /**
     * Multi-head attention on a packed projection qkv [B, T, 3C] (q, k, v side by side), read in
     * place, → [B, T, C] with the heads merged: what {@code scaled_dot_product_attention} gives on
     * {@code qkv.split(C, 2)} viewed as {@code heads} heads and transposed, without the copies. See
     * {@link ScaledDotProductAttentionFunction#applyPacked}.
     *
     * @throws IllegalArgumentException if qkv is not [B, T, 3C] with heads dividing C, or p lies outside [0, 1]
     */
    public static Tensor multiHeadAttentionPacked(Tensor qkv, int heads, double dropoutP, boolean isCausal,
            Double scale, org.ddp4j.tensor.Generator generator) {
        return ScaledDotProductAttentionFunction.applyPacked(qkv, heads, dropoutP, isCausal, scale, generator);
    }

    /**
     * Mean cross entropy of float32 logits [N, C] against int64 targets [N], leaving out targets equal
     * to ignoreIndex (NaN when all are), for large vocabularies: only each row's logsumexp is kept
     * for the backward. Mirrors {@code F.cross_entropy(logits, target, ignore_index=ignoreIndex)}; see
     * {@link CrossEntropyFunction#apply(Tensor, Tensor, long)}.
     *
     * @throws IllegalArgumentException on mismatched shapes or a target outside [0, C) other than ignoreIndex
     */
    public static Tensor crossEntropy(Tensor logits, Tensor target, long ignoreIndex) {
        return CrossEntropyFunction.apply(logits, target, ignoreIndex);
    }

    /**
     * A language model's head fused with its loss: {@code cross_entropy(h · wᵀ, target,
     * ignore_index=ignoreIndex)} for h [N, C], w [V, C], target [N], without the [N, V] logits; a
     * float32 scalar. See {@link LinearCrossEntropyFunction#apply} (one backward per forward).
     *
     * @throws IllegalArgumentException on wrong dtypes or shapes, or a target outside [0, V) that is not ignoreIndex
     */
    public static Tensor linearCrossEntropy(Tensor h, Tensor w, Tensor target, long ignoreIndex) {
        return LinearCrossEntropyFunction.apply(h, w, target, ignoreIndex);
    }
}
