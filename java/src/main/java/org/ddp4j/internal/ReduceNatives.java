package org.ddp4j.internal;

/**
 * JNI declarations for the reduce family (native/src/jni/reduce_natives.cpp, native/src/core/ops_reduce.cpp,
 * kernels in native/src/cpu/reduce.cpp; Java side org.ddp4j.tensor.ReduceOps). Reductions over dimensions, softmax and log_softmax (float32).
 * Arguments and results are tensor handles; bad shapes, dims or dtypes throw
 * IllegalArgumentException naming the op and the shapes. Natives that create tensors take the
 * thread's {@link NativeResults#buffer()} as {@code results} and fill one slot per output; single-output
 * ones also return the handle.
 */
public final class ReduceNatives {
    static {
        NativeLibrary.load();
    }

    private ReduceNatives() {}

    /** torch.sum(x, dims, keepdim) or, with mean, torch.mean (dims empty: all), summed in double. */
    public static native long sumDims(long x, long[] dims, boolean keepdim, boolean mean, long[] results);

    /** torch.max(x, dim, keepdim): fills results with {values, indices (int64)}. */
    public static native void maxDim(long x, int dim, boolean keepdim, long[] results);

    /** torch.softmax(x, dim), or torch.log_softmax with log. */
    public static native long softmax(long x, int dim, boolean log, long[] results);

    /** The gradient of softmax / log_softmax from the forward's output y. */
    public static native long softmaxBackward(long gy, long y, int dim, boolean log, long[] results);
}
