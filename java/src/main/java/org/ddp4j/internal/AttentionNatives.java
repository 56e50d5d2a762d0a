package org.ddp4j.internal;

/**
 * JNI declarations for the fused scaled dot-product attention (native/src/core/ops_attention.cpp,
 * native/src/jni/attention_natives.cpp; Java side
 * {@link org.ddp4j.nn.functional.ScaledDotProductAttentionFunction}). Handles as in
 * {@link LinearNatives}; mask may be 0. scale &lt;= 0 means 1/√E.
 */
public final class AttentionNatives {
    static {
        NativeLibrary.load();
    }

    private AttentionNatives() {}

    /** Fills {out [..., L, Ev], lse [..., L]}. */
    public static native void attentionForward(long q, long k, long v, long mask, boolean causal, double scale,
            double dropoutP, long dropoutSeed, long[] results);

    /** Fills {dq, dk, dv}. */
    public static native void attentionBackward(long gout, long q, long k, long v, long mask, long out, long lse,
            boolean causal, double scale, double dropoutP, long dropoutSeed, long[] results);

    /** Fills {out [B, T, C], lse [B, heads, T]} of attention over qkv [B, T, 3C] read in place. */
    public static native void attentionPackedForward(long qkv, int heads, boolean causal, double scale, double dropoutP,
            long dropoutSeed, long[] results);

    /** dqkv [B, T, 3C] of attentionPackedForward (also returned). */
    public static native long attentionPackedBackward(long gout, long qkv, long out, long lse, int heads, boolean causal,
            double scale, double dropoutP, long dropoutSeed, long[] results);
}
