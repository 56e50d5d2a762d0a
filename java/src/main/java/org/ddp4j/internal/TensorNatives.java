package org.ddp4j.internal;

/**
 * JNI declarations for tensor creation, copies and lifetime (native/src/jni/tensor_natives.cpp).
 * Handles are pointers to native tensors owned by {@link org.ddp4j.tensor.Tensor}; 0 means absent.
 * Errors arrive as IllegalArgumentException / IllegalStateException with the native message.
 * Natives that create tensors take the thread's {@link NativeResults#buffer()} as {@code results}
 * and fill one slot per output with its handle and metadata (one crossing per op); single-output
 * ones also return the handle.
 */
public final class TensorNatives {
    static {
        NativeLibrary.load();
    }

    private TensorNatives() {}

    public static native long empty(long[] shape, int dtype, int deviceType, int deviceIndex, long[] results);

    public static native long full(long[] shape, int dtype, int deviceType, int deviceIndex, double value, long[] results);

    public static native long fromFloats(float[] data, int offset, long[] shape, long[] results);

    public static native long fromLongs(long[] data, int offset, long[] shape, long[] results);

    /** A bool CPU tensor holding data[0, numel). */
    public static native long fromBooleans(boolean[] data, long[] shape, long[] results);

    /** The values of a bool tensor (copied to the host first). */
    public static native void toBooleans(long handle, boolean[] out);

    /** A bfloat16 or float16 (dtype ordinal) CPU tensor holding the bit patterns data[offset, offset + numel). */
    public static native long fromBits(short[] data, int offset, long[] shape, int dtype, long[] results);

    /** The bit patterns of a bfloat16 or float16 tensor (copied to the host first). */
    public static native void toBits(long handle, short[] out);

    public static native void toFloats(long handle, float[] out);

    public static native void toLongs(long handle, long[] out);

    /** A copy on the device (type ordinal, index); the same tensor when it is already there. Needs libddp4j_cuda for GPUs. */
    public static native long toDevice(long handle, int deviceType, int deviceIndex, long[] results);

    /** A copy converted to the dtype (ordinal); the same tensor when it already has it (ops::to_dtype). */
    public static native long toDType(long handle, int dtype, long[] results);

    public static native long view(long handle, long[] shape, long[] results);

    /** A view of elements [offset, offset + numel(shape)) of a tensor's flat data. */
    public static native long flatSlice(long handle, long offset, long[] shape, long[] results);

    public static native long cloneTensor(long handle, long[] results);

    public static native void copyInto(long src, long dst);

    /** Copies the tensors behind sources into consecutive elements of flat (ops::flatten_into). */
    public static native void flattenInto(long[] sources, long flat);

    /** Copies consecutive elements of flat into the tensors behind destinations (ops::unflatten_from). */
    public static native void unflattenFrom(long flat, long[] destinations);

    public static native void fill(long handle, double value);

    public static native void free(long handle);

    /** {dtype ordinal, device type ordinal, device index, sizes...} of a tensor. */
    public static native long[] meta(long handle);

    public static native long bytesInUse(int deviceType);

    public static native long allocationCount(int deviceType);

    /** CPU bytes the calling thread allocated less those it freed (Cleaner frees on its own thread do not count). */
    public static native long cpuBytesNetOnThisThread();

    public static native long bytesCached(int deviceType);

    public static native void emptyCache(int deviceType);

    public static native long cacheLimit(int deviceType);

    public static native void setCacheLimit(int deviceType, long bytes);

    public static native long dataAddress(long handle);
}
