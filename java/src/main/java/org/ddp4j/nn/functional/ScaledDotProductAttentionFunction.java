package org.ddp4j.nn.functional;

import org.ddp4j.internal.AttentionNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * The differentiable, fused scaled dot-product attention. Mirrors
 * {@code torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal,
 * scale)}: {@code dropout(softmax(q·kᵀ·scale + mask)) · v}, computed as flash attention does (blocks of
 * queries against blocks of keys with an online softmax), so no [L, S] matrix is ever allocated; the
 * node keeps the output and each query row's logsumexp, and the backward recomputes the
 * probabilities block by block. Work is split over (batch·heads, query blocks) with the same bits for
 * any thread count.
 */
public final class ScaledDotProductAttentionFunction {
    private ScaledDotProductAttentionFunction() {}

    /**
     * Attention of queries over keys and values.
     *
     * @param q float32 [..., L, E]
     * @param k float32 [..., S, E] (the same leading dims as q, e.g. [B, H])
     * @param v float32 [..., S, Ev]
     * @param attnMask null, or a float32 additive mask broadcastable to [..., L, S] (use -inf to
     *     exclude a key); it receives no gradient
     * @param dropoutP probability of dropping an attention weight, in [0, 1]; kept weights are scaled
     *     by 1/(1 - p). The keep mask is a counter-based hash of (a seed drawn once per call from
     *     generator, the batch·head index, i, j), recomputed in the backward, never stored
     * @param isCausal query i attends to keys j ≤ i only (PyTorch's lower triangle from the top left,
     *     also when L ≠ S); may be combined with attnMask
     * @param scale the factor of q·kᵀ, or null for 1/√E
     * @param generator the dropout's random source (null: {@link Generator#defaultGenerator()}); not
     *     drawn from when dropoutP is 0
     * @return float32 [..., L, Ev], recording a "ScaledDotProductAttentionBackward" node when q, k or
     *     v requires grad. A query row whose keys are all masked out gives 0 and passes no gradient, as
     *     PyTorch's scaled_dot_product_attention since 2.5 (a written-out softmax gives NaN there).
     * @throws IllegalArgumentException on mismatched shapes (all three named), a mask that does not
     *     broadcast, dropoutP outside [0, 1] or a non-positive scale
     */
    public static Tensor apply(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP, boolean isCausal,
            Double scale, Generator generator) {
        DropoutFunction.checkProbability(dropoutP);
        final double s = checkedScale(scale, "E");
        final long seed = dropoutSeed(dropoutP, generator);
        long[] r = NativeResults.buffer();
        AttentionNatives.attentionForward(TensorHandles.nativeHandle(q), TensorHandles.nativeHandle(k), TensorHandles.nativeHandle(v), maskHandle(attnMask), isCausal, s,
                dropoutP, seed, r);
        Tensor out = TensorHandles.fromNativeResult(r, 0);
        Tensor lse = TensorHandles.fromNativeResult(r, 1);
        Node node = new Node("ScaledDotProductAttentionBackward", q, k, v) {
            @Override
            protected Tensor[] backward(Tensor gout) {
                long[] g = NativeResults.buffer();
                AttentionNatives.attentionBackward(TensorHandles.nativeHandle(gout), TensorHandles.nativeHandle(q), TensorHandles.nativeHandle(k),
                        TensorHandles.nativeHandle(v), maskHandle(attnMask), TensorHandles.nativeHandle(out), TensorHandles.nativeHandle(lse), isCausal, s, dropoutP, seed, g);
                Tensor dq = TensorHandles.fromNativeResult(g, 0);
                Tensor dk = TensorHandles.fromNativeResult(g, 1);
                Tensor dv = TensorHandles.fromNativeResult(g, 2);
                return new Tensor[] {keepIf(needsInputGrad(0), dq), keepIf(needsInputGrad(1), dk),
                    keepIf(needsInputGrad(2), dv)};
            }
        };
        return attach(node, out, lse);
    }

    /**
     * Multi-head attention on one projection's packed output, read in place: the same as
     * {@link #apply} on {@code qkv.split(C, 2)}, each part viewed as [B, T, heads, D] and transposed
     * to [B, heads, T, D], with the output transposed back to [B, T, C], but without those five
     * copies (and their gradients' copies in the backward). It is what GPT-2's attention does with
     * its c_attn output; PyTorch has no single call for it.
     *
     * @param qkv float32 [B, T, 3C]: q, k and v side by side in the last dim
     * @param heads the number of heads, dividing C
     * @param dropoutP as {@link #apply}'s (the keep mask hashes the batch·head index, so it equals
     *     the unpacked call's for the same seed)
     * @param isCausal as {@link #apply}'s
     * @param scale the factor of q·kᵀ, or null for 1/√D (D = C / heads)
     * @param generator as {@link #apply}'s
     * @return float32 [B, T, C], recording a "ScaledDotProductAttentionBackward" node when qkv
     *     requires grad
     * @throws IllegalArgumentException if qkv is not [B, T, 3C] with heads dividing C, dropoutP lies
     *     outside [0, 1] or scale is not positive
     */
    public static Tensor applyPacked(Tensor qkv, int heads, double dropoutP, boolean isCausal, Double scale,
            Generator generator) {
        DropoutFunction.checkProbability(dropoutP);
        final double s = checkedScale(scale, "D");
        final long seed = dropoutSeed(dropoutP, generator);
        long[] r = NativeResults.buffer();
        AttentionNatives.attentionPackedForward(TensorHandles.nativeHandle(qkv), heads, isCausal, s, dropoutP, seed, r);
        Tensor out = TensorHandles.fromNativeResult(r, 0);
        Tensor lse = TensorHandles.fromNativeResult(r, 1);
        Node node = new Node("ScaledDotProductAttentionBackward", qkv) {
            @Override
            protected Tensor[] backward(Tensor gout) {
                return new Tensor[] {TensorHandles.fromNativeResult(AttentionNatives.attentionPackedBackward(TensorHandles.nativeHandle(gout),
                        TensorHandles.nativeHandle(qkv), TensorHandles.nativeHandle(out), TensorHandles.nativeHandle(lse), heads, isCausal, s, dropoutP, seed,
                        NativeResults.buffer()))};
            }
        };
        return attach(node, out, lse);
    }

    /** scale, or 0 (the kernel's 1/√size) for null; throws IllegalArgumentException unless positive. */
    private static double checkedScale(Double scale, String size) {
        if (scale != null && !(scale > 0)) {
            throw new IllegalArgumentException("scaled_dot_product_attention: scale must be positive, got " + scale
                    + " (pass null for 1/sqrt(" + size + "))");
        }
        return scale == null ? 0 : scale;
    }

    /** The dropout mask's seed for one call (0, and no draw, without dropout). */
    private static long dropoutSeed(double dropoutP, Generator generator) {
        return dropoutP > 0 ? drawSeed(generator == null ? Generator.defaultGenerator() : generator) : 0;
    }

    /** Records node on out; without a graph the logsumexp is not needed and goes at once. */
    private static Tensor attach(Node node, Tensor out, Tensor lse) {
        node.attach(out);
        if (out.gradFn() != node) {
            lse.close();
        }
        return out;
    }

    /** The mask's handle, asked for at each use: a closed mask then fails in Java, not in native code. */
    private static long maskHandle(Tensor attnMask) {
        return attnMask == null ? 0 : TensorHandles.nativeHandle(attnMask);
    }

    /** 64 random bits from two draws of generator: the dropout mask's seed for one call. */
    private static long drawSeed(Generator generator) {
        long high = generator.nextInt(Integer.MAX_VALUE);
        long low = generator.nextInt(Integer.MAX_VALUE);
        return (high << 33) ^ (low << 2) ^ (high >>> 29);
    }

    private static Tensor keepIf(boolean needed, Tensor grad) {
        if (!needed) {
            grad.close();
            return null;
        }
        return grad;
    }
}
