package org.ddp4j.internal;

/**
 * JNI declarations for the unary family (native/src/jni/unary_natives.cpp, native/src/core/ops_unary.cpp,
 * kernels in native/src/cpu/unary.cpp; Java side org.ddp4j.tensor.UnaryOps). Element-wise functions of one tensor.
 * Arguments and results are tensor handles; bad shapes, dims or dtypes throw
 * IllegalArgumentException naming the op and the shapes. Natives that create tensors take the
 * thread's {@link NativeResults#buffer()} as {@code results} and fill one slot per output; single-output
 * ones also return the handle.
 */
public final class UnaryNatives {
    static {
        NativeLibrary.load();
    }

    private UnaryNatives() {}

    /** Op codes of {@link #unary} (native kernels::UnaryOp). */
    public static final int EXP = 0, LOG = 1, TANH = 2, POW = 3, SQRT = 4, NEG = 5, ADD_SCALAR = 6, MUL_SCALAR = 7,
            DIV_SCALAR = 8, LOGICAL_NOT = 9;

    /** op(x) (scalar: POW's exponent, the *_SCALAR ops' operand); float32, LOGICAL_NOT bool. */
    public static native long unary(long x, int op, double scalar, long[] results);
}
