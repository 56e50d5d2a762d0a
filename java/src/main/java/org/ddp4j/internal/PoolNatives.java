package org.ddp4j.internal;

/**
 * JNI declarations for pooling, native/src/core/ops_pool.cpp's family
 * (native/src/jni/pool_natives.cpp; Java side {@link org.ddp4j.nn.functional.MaxPool2dFunction},
 * {@link org.ddp4j.nn.functional.AvgPool2dFunction} and
 * {@link org.ddp4j.nn.functional.AdaptiveAvgPool2dFunction}).
 * Arguments and results are tensor handles; bad shapes, dtypes or geometry throw
 * {@link IllegalArgumentException} with a message naming the op and the shapes involved. Callers
 * own every returned handle.
 * Natives that create tensors take the thread's {@link NativeResults#buffer()} as {@code results}
 * and fill one slot per output with its handle and metadata (one crossing per op); single-output
 * ones also return the handle.
 */
public final class PoolNatives {
    static {
        NativeLibrary.load();
    }

    private PoolNatives() {}

    /**
     * {@code torch.nn.functional.max_pool2d(..., return_indices=True)}: fills results with {y, indices}
     * ([N, C, P, Q], indices int64 flat h*W+w within each plane), with PyTorch's output size for
     * the given dilation and ceil mode.
     */
    public static native void maxPool2dForward(long x, int kernelH, int kernelW, int strideH, int strideW,
            int padH, int padW, int dilationH, int dilationW, boolean ceilMode, long[] results);

    /** Scatters gy back to the argmax positions: returns gx of shape xShape. */
    public static native long maxPool2dBackward(long gy, long indices, long[] xShape, long[] results);

    /**
     * {@code torch.nn.functional.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad,
     * divisor_override)}: returns y [N, C, P, Q]; divisorOverride 0 means none.
     */
    public static native long avgPool2dForward(long x, int kernelH, int kernelW, int strideH, int strideW, int padH,
            int padW, boolean ceilMode, boolean countIncludePad, long divisorOverride, long[] results);

    /** The gradient of {@link #avgPool2dForward} with the same geometry: returns gx of shape xShape. */
    public static native long avgPool2dBackward(long gy, long[] xShape, int kernelH, int kernelW, int strideH,
            int strideW, int padH, int padW, boolean ceilMode, boolean countIncludePad, long divisorOverride,
            long[] results);

    /** {@code torch.nn.functional.adaptive_avg_pool2d(x, (outH, outW))}: returns y [N, C, outH, outW]. */
    public static native long adaptiveAvgPool2dForward(long x, long outH, long outW, long[] results);

    /** The gradient of {@link #adaptiveAvgPool2dForward}: returns gx of shape xShape. */
    public static native long adaptiveAvgPool2dBackward(long gy, long[] xShape, long[] results);
}
