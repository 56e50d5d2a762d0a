package org.ddp4j.internal;

/**
 * JNI declarations for the transformer layers' family, as native/src/core/ops_transformer.cpp groups
 * it: embedding, layer norm, GELU and the large-vocabulary cross entropy, forward and backward
 * (native/src/jni/transformer_natives.cpp; Java side in {@code org.ddp4j.nn.functional}). Arguments
 * and results are tensor handles (0 = absent optional tensor); callers own every returned handle.
 * Bad dtypes, shapes or indices throw IllegalArgumentException naming the op and the shapes.
 * Natives that create tensors take the thread's {@link NativeResults#buffer()} as {@code results}.
 */
public final class TransformerNatives {
    static {
        NativeLibrary.load();
    }

    private TransformerNatives() {}

    /** {@code F.embedding}: index int64 [*], weight [V, D] → [*, D]. */
    public static native long embeddingForward(long index, long weight, long[] results);

    /** The dense weight gradient [numEmbeddings, D]; paddingIdx &lt; 0 means none. */
    public static native long embeddingBackward(long gout, long index, long numEmbeddings, long paddingIdx,
            long[] results);

    /** {@code F.layer_norm} over the trailing normalizedDims dims; fills {y, mean, rstd}. */
    public static native void layerNormForward(long x, int normalizedDims, long weight, long bias, double eps,
            long[] results);

    /** Fills {dx, dweight (0 without weight), dbias (0 unless hasBias)}. */
    public static native void layerNormBackward(long gy, long x, int normalizedDims, long mean, long rstd, long weight,
            boolean hasBias, long[] results);

    /** {@code F.gelu(x, approximate='tanh' if tanh else 'none')}. */
    public static native long geluForward(long x, boolean tanh, long[] results);

    /** gy · gelu'(x). */
    public static native long geluBackward(long gy, long x, boolean tanh, long[] results);

    /** Mean cross entropy over targets != ignoreIndex; fills {loss [], lse [N]}. */
    public static native void crossEntropyLseForward(long logits, long target, long ignoreIndex, long[] results);

    /** The logits' gradient [N, C] from the forward's lse. */
    public static native long crossEntropyLseBackward(long gout, long logits, long lse, long target, long ignoreIndex,
            long[] results);

    /**
     * The head fused with its loss: cross entropy of h · wᵀ (h [N, C], w [V, C]) without the [N, V]
     * logits; fills {loss [], gh [N, C] or 0, gw [V, C] or 0}, the gradients for a grad_output of 1
     * when asked for; compute: the GEMMs' DType ordinal (autocast).
     */
    public static native void linearCrossEntropy(long h, long w, long target, long ignoreIndex, boolean needGh,
            boolean needGw, int compute, long[] results);
}
