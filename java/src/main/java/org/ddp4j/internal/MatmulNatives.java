package org.ddp4j.internal;

/**
 * JNI declarations for the matmul family (native/src/jni/matmul_natives.cpp, native/src/core/ops_matmul.cpp,
 * kernels in native/src/cpu/matmul.cpp; Java side org.ddp4j.tensor.MatmulOps). Batched matrix products through the BLAS path (native/src/cpu/gemm.h).
 * Arguments and results are tensor handles; bad shapes, dims or dtypes throw
 * IllegalArgumentException naming the op and the shapes. Natives that create tensors take the
 * thread's {@link NativeResults#buffer()} as {@code results} and fill one slot per output; single-output
 * ones also return the handle.
 */
public final class MatmulNatives {
    static {
        NativeLibrary.load();
    }

    private MatmulNatives() {}

    /**
     * torch.matmul of float32 a and b of at least 2 dims, batch dims broadcast; transA / transB
     * read an operand with its last two dims swapped (BLAS flags, no copy).
     */
    public static native long matmul(long a, long b, boolean transA, boolean transB, long[] results);
}
