package org.ddp4j.internal;

/**
 * JNI declarations for batch normalisation, native/src/core/ops_norm.cpp's family
 * (native/src/jni/norm_natives.cpp; Java side {@link org.ddp4j.nn.functional.BatchNorm2dFunction} and
 * {@link org.ddp4j.nn.functional.BatchNorm2dReluFunction}).
 * Arguments are tensor handles. Bad shapes or dtypes throw
 * {@link IllegalArgumentException} with a message naming the op and the shapes involved. Callers
 * own every returned handle.
 * Natives that create tensors take the thread's {@link NativeResults#buffer()} as {@code results}
 * and fill one slot per output with its handle and metadata (one crossing per op); single-output
 * ones also return the handle.
 */
public final class NormNatives {
    static {
        NativeLibrary.load();
    }

    private NormNatives() {}

    /**
     * Training-mode {@code torch.nn.functional.batch_norm}: fills results with {y, saveMean [C], saveInvstd [C],
     * affine [2, C]} (affine, CPU only, else handle 0: the scale and shift y was made with, for
     * {@link #batchNorm2dRecompute}) and updates runningMean / runningVar [C] in place (unbiased
     * variance, given momentum).
     */
    public static native void batchNorm2dForwardTrain(long x, long gamma, long beta, long runningMean,
            long runningVar, double momentum, double eps, long[] results);

    /** Eval-mode batch norm with the running statistics; returns y. */
    public static native long batchNorm2dForwardEval(long x, long gamma, long beta, long runningMean,
            long runningVar, double eps, long[] results);

    /**
     * Training-mode batch-norm gradients given the saved statistics: fills results with {gx, ggamma [C], gbeta [C]}.
     * With saveMean = running mean and saveInvstd = 1/sqrt(running var + eps), ggamma and gbeta are
     * also the eval-mode gradients.
     */
    public static native void batchNorm2dBackward(long gy, long x, long gamma, long saveMean, long saveInvstd, long[] results);

    /**
     * Training-mode batch norm fused with the ReLU after it: y = relu(batch_norm(x) + residual)
     * (residual 0 for none, else float32 of x's shape). Fills results with {y, saveMean [C],
     * saveInvstd [C], affine [2, C]} (affine: the scale and shift y was made with, for
     * {@link #batchNorm2dRecompute}) and updates runningMean / runningVar as
     * {@link #batchNorm2dForwardTrain}.
     */
    public static native void batchNorm2dReluForwardTrain(long x, long gamma, long beta, long runningMean,
            long runningVar, double momentum, double eps, long residual, long[] results);

    /**
     * The y of {@link #batchNorm2dForwardTrain} (relu false, residual 0) or of
     * {@link #batchNorm2dReluForwardTrain} (relu true, its residual) again, bit for bit, from x and
     * that forward's affine output; returns y.
     */
    public static native long batchNorm2dRecompute(long x, long affine, long residual, boolean relu, long[] results);

    /** Eval-mode form of {@link #batchNorm2dReluForwardTrain} with the running statistics; returns y. */
    public static native long batchNorm2dReluForwardEval(long x, long gamma, long beta, long runningMean,
            long runningVar, double eps, long residual, long[] results);

    /**
     * Gradients of {@link #batchNorm2dReluForwardTrain} from its output y: fills results with {gx,
     * ggamma [C], gbeta [C]} and, when wantMasked, a fourth tensor: the ReLU's input gradient
     * {@code y > 0 ? gy : 0} (the residual's gradient). For a forward without residual, y may be 0
     * and affine (that forward's fourth output) given instead: the mask is formed from x, the same
     * bits; else affine is 0.
     */
    public static native void batchNorm2dReluBackward(long gy, long y, long x, long gamma, long saveMean,
            long saveInvstd, boolean wantMasked, long affine, long[] results);
}
