package org.ddp4j.internal;

/**
 * JNI declarations for max-pooling, native/src/core/ops_pool.cpp's family
 * (native/src/jni/pool_natives.cpp; Java side {@link org.ddp4j.nn.functional.MaxPool2dFunction}).
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
     * ([N, C, P, Q], indices int64 flat h*W+w within each plane).
     */
    public static native void maxPool2dForward(long x, int kernelH, int kernelW, int strideH, int strideW,
            int padH, int padW, long[] results);

    /** Scatters gy back to the argmax positions: returns gx of shape xShape. */
    public static native long maxPool2dBackward(long gy, long indices, long[] xShape, long[] results);
}
