package org.ddp4j.internal;

/**
 * JNI declarations for the shape family (native/src/jni/shape_natives.cpp, native/src/core/ops_shape.cpp,
 * kernels in native/src/cpu/shape.cpp; Java side org.ddp4j.tensor.ShapeOps). Copies that move elements: the native tensor is contiguous, so each returns a new contiguous tensor (any dtype unless said).
 * Arguments and results are tensor handles; bad shapes, dims or dtypes throw
 * IllegalArgumentException naming the op and the shapes. Natives that create tensors take the
 * thread's {@link NativeResults#buffer()} as {@code results} and fill one slot per output; single-output
 * ones also return the handle.
 */
public final class ShapeNatives {
    static {
        NativeLibrary.load();
    }

    private ShapeNatives() {}

    /** torch.permute(x, dims).contiguous(). */
    public static native long permute(long x, long[] dims, long[] results);

    /** torch.transpose(x, d0, d1).contiguous(). */
    public static native long transpose(long x, int d0, int d1, long[] results);

    /** torch.cat(xs, dim). */
    public static native long cat(long[] xs, int dim, long[] results);

    /** torch.narrow(x, dim, start, length).contiguous(). */
    public static native long narrow(long x, int dim, long start, long length, long[] results);

    /** Zeros of xShape with gy copied in at [start, start + gy.size(dim)) along dim (narrow's gradient). */
    public static native long narrowBackward(long gy, long[] xShape, int dim, long start, long[] results);

    /** torch.index_select(x, dim, index), index int64 1-D. */
    public static native long indexSelect(long x, int dim, long index, long[] results);

    /** index_select's gradient (float32): gy's slices added at index along dim into zeros of xShape, in index order. */
    public static native long indexSelectBackward(long gy, long[] xShape, int dim, long index, long[] results);

    /** torch.gather(x, dim, index). */
    public static native long gather(long x, int dim, long index, long[] results);

    /** gather's gradient (float32): gy scatter-added at index into zeros of xShape, in index order. */
    public static native long gatherBackward(long gy, long[] xShape, int dim, long index, long[] results);

    /** torch.tril(x, diagonal) (upper false) or torch.triu(x, diagonal) (upper true). */
    public static native long triangle(long x, long diagonal, boolean upper, long[] results);
}
