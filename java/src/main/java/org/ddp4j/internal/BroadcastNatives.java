package org.ddp4j.internal;

/**
 * JNI declarations for the broadcast family (native/src/jni/broadcast_natives.cpp, native/src/core/ops_broadcast.cpp,
 * kernels in native/src/cpu/broadcast.cpp; Java side org.ddp4j.tensor.BroadcastOps). Binary element-wise ops with PyTorch broadcasting.
 * Arguments and results are tensor handles; bad shapes, dims or dtypes throw
 * IllegalArgumentException naming the op and the shapes. Natives that create tensors take the
 * thread's {@link NativeResults#buffer()} as {@code results} and fill one slot per output; single-output
 * ones also return the handle.
 */
public final class BroadcastNatives {
    static {
        NativeLibrary.load();
    }

    private BroadcastNatives() {}

    /** Op codes of {@link #binary} (native kernels::BinaryOp). */
    public static final int ADD = 0, SUB = 1, MUL = 2, DIV = 3, EQ = 4, NE = 5, LT = 6, GT = 7, LE = 8, GE = 9;

    /** a op b broadcast: ADD..DIV float32 -> float32; EQ..GE one dtype (float32, int64, bool) -> bool. */
    public static native long binary(long a, long b, int op, long[] results);

    /** torch.where(condition, a, b), condition bool, all broadcast. */
    public static native long where(long condition, long a, long b, long[] results);

    /** torch.Tensor.masked_fill(mask, value), mask bool broadcast to x's shape. */
    public static native long maskedFill(long x, long mask, double value, long[] results);
}
