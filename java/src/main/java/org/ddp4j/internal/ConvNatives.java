package org.ddp4j.internal;

/**
 * JNI declarations for Conv2d, BatchNorm2d and MaxPool2d (native/src/jni/conv_natives.cpp).
 * Arguments and results are tensor handles (0 = absent optional tensor); ops that produce several
 * tensors return their handles as a {@code long[]} in the documented order, 0 for an output that
 * was not requested. Bad shapes, dtypes or geometry throw {@link IllegalArgumentException} with
 * a message naming the op and the shapes involved. Callers own every returned handle.
 */
public final class ConvNatives {
    static {
        NativeLibrary.load();
    }

    private ConvNatives() {}

    /**
     * {@code torch.nn.functional.conv2d}: x [N, C, H, W], w [K, C, R, S], b [K] or 0; returns y
     * [N, K, P, Q] with P = (H + 2 padH - R) / strideH + 1 (floor), likewise Q.
     */
    public static native long conv2dForward(long x, long w, long b, int strideH, int strideW, int padH, int padW);

    /**
     * Gradients of {@link #conv2dForward}: returns {gx (0 unless needGx), gw, gb (0 unless hasBias)}.
     */
    public static native long[] conv2dBackward(long gy, long x, long w, boolean needGx, boolean hasBias,
            int strideH, int strideW, int padH, int padW);

    /**
     * Training-mode {@code torch.nn.functional.batch_norm}: returns {y, saveMean [C], saveInvstd [C]}
     * and updates runningMean / runningVar [C] in place (unbiased variance, given momentum).
     */
    public static native long[] batchNorm2dForwardTrain(long x, long gamma, long beta, long runningMean,
            long runningVar, double momentum, double eps);

    /** Eval-mode batch norm with the running statistics; returns y. */
    public static native long batchNorm2dForwardEval(long x, long gamma, long beta, long runningMean,
            long runningVar, double eps);

    /**
     * Training-mode batch-norm gradients given the saved statistics: returns {gx, ggamma [C], gbeta [C]}.
     * With saveMean = running mean and saveInvstd = 1/sqrt(running var + eps), ggamma and gbeta are
     * also the eval-mode gradients.
     */
    public static native long[] batchNorm2dBackward(long gy, long x, long gamma, long saveMean, long saveInvstd);

    /**
     * {@code torch.nn.functional.max_pool2d(..., return_indices=True)}: returns {y, indices}
     * ([N, C, P, Q], indices int64 flat h*W+w within each plane).
     */
    public static native long[] maxPool2dForward(long x, int kernelH, int kernelW, int strideH, int strideW,
            int padH, int padW);

    /** Scatters gy back to the argmax positions: returns gx of shape xShape. */
    public static native long maxPool2dBackward(long gy, long indices, long[] xShape);
}
