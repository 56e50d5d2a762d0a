package org.ddp4j.internal;

/**
 * JNI declarations for 2-D convolution, native/src/core/ops_conv.cpp's family
 * (native/src/jni/conv_natives.cpp; Java side {@link org.ddp4j.nn.functional.Conv2dFunction}).
 * Arguments are tensor handles (0 = absent optional tensor); a 0 handle marks an output that was
 * not requested. Bad shapes, dtypes or geometry throw {@link IllegalArgumentException} with a
 * message naming the op and the shapes involved. Callers own every returned handle.
 * Natives that create tensors take the thread's {@link NativeResults#buffer()} as {@code results}
 * and fill one slot per output with its handle and metadata (one crossing per op); single-output
 * ones also return the handle.
 */
public final class ConvNatives {
    static {
        NativeLibrary.load();
    }

    private ConvNatives() {}

    /**
     * {@code torch.nn.functional.conv2d}: x [N, C, H, W], w [K, C / groups, R, S], b [K] or 0; returns
     * y [N, K, P, Q] with P = (H + 2 padH - dilationH (R - 1) - 1) / strideH + 1 (floor), likewise Q.
     * {@code compute}: the DType ordinal the GEMMs multiply in (0 float32; bfloat16 / float16 under
     * {@link org.ddp4j.amp.Autocast}: operands rounded, float32 accumulation, float32 output).
     */
    public static native long conv2dForward(long x, long w, long b, int strideH, int strideW, int padH, int padW,
            int dilationH, int dilationW, int groups, int compute, long[] results);

    /**
     * Gradients of {@link #conv2dForward} (the same {@code compute}): fills results with {gx (0 unless needGx), gw, gb (0 unless hasBias)}.
     */
    public static native void conv2dBackward(long gy, long x, long w, boolean needGx, boolean hasBias,
            int strideH, int strideW, int padH, int padW, int dilationH, int dilationW, int groups, int compute,
            long[] results);
}
