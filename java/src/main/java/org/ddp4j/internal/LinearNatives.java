package org.ddp4j.internal;

/**
 * JNI declarations for the linear family, as native/src/core/ops_linear.cpp groups it: linear, addmm
 * and ReLU forward and backward (native/src/jni/linear_natives.cpp; Java side
 * {@link org.ddp4j.nn.functional.LinearFunction} and {@link org.ddp4j.nn.functional.ReluFunction}).
 * Arguments and results are tensor handles (0 = absent optional tensor); callers own every returned
 * handle. Bad dtypes or shapes throw IllegalArgumentException with a message naming the op and the
 * shapes involved.
 * Natives that create tensors take the thread's {@link NativeResults#buffer()} as {@code results}
 * and fill one slot per output with its handle and metadata (one crossing per op); single-output
 * ones also return the handle.
 */
public final class LinearNatives {
    static {
        NativeLibrary.load();
    }

    private LinearNatives() {}

    /**
     * {@code torch.nn.functional.linear}: y[*, out] = x[*, in] · wᵀ + b; b may be 0 (no bias).
     * {@code compute}: the DType ordinal the GEMM multiplies in (0 float32; bfloat16 / float16 under
     * {@link org.ddp4j.amp.Autocast}: operands rounded, float32 accumulation, float32 output).
     */
    public static native long linearForward(long x, long w, long b, int compute, long[] results);

    /** Fills results with {gx, gw, gb}; gx is 0 unless needGx, gb is 0 unless hasBias; compute as the forward's. */
    public static native void linearBackward(long gy, long x, long w, boolean needGx, boolean hasBias, int compute,
            long[] results);

    /**
     * {@code torch.addmm(b, x, w)} with x [*, in] and w [in, out] read in place: y[*, out] = b + x · w;
     * b may be 0 (no bias); compute as linearForward's.
     */
    public static native long addmmForward(long b, long x, long w, int compute, long[] results);

    /** Fills results with {gx, gw [in, out], gb}; gx is 0 unless needGx, gb is 0 unless hasBias. */
    public static native void addmmBackward(long gy, long x, long w, boolean needGx, boolean hasBias, int compute,
            long[] results);

    /** {@code torch.relu}: max(x, 0). */
    public static native long reluForward(long x, long[] results);

    /** gy where the forward output y is positive, else 0. */
    public static native long reluBackward(long gy, long y, long[] results);
}
