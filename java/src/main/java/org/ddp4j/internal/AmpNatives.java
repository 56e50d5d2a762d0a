package org.ddp4j.internal;

/**
 * JNI declarations for automatic mixed precision, native/src/core/ops_amp.cpp's family
 * (native/src/jni/amp_natives.cpp; Java side {@code org.ddp4j.amp.Autocast} and
 * {@code org.ddp4j.amp.GradScaler}). Arguments are tensor handles. Bad dtypes or shapes throw
 * {@link IllegalArgumentException} naming the op.
 */
public final class AmpNatives {
    static {
        NativeLibrary.load();
    }

    private AmpNatives() {}

    /**
     * {@code torch._amp_foreach_non_finite_check_and_unscale_}: each float32 tensor of {@code grads}
     * is multiplied by {@code invScale} in place (one threaded pass each) and {@code found} (float32
     * [1], same device) is set to 1 when any of them held an inf or NaN before; it is never reset.
     */
    public static native void nonFiniteCheckAndUnscale(long[] grads, float invScale, long found);

    /** The CPU kernel autocast's bfloat16 GEMMs take now: "avx512bf16" or "widen". */
    public static native String cpuKernel();

    /**
     * Forces that kernel ("avx512bf16" or "widen"; tests compare both); IllegalArgumentException if
     * the name is unknown or this CPU has no AVX512-BF16 for "avx512bf16".
     */
    public static native void setCpuKernel(String name);
}
