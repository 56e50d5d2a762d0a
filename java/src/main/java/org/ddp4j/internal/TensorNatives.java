package org.ddp4j.internal;

/**
 * JNI declarations for tensor creation, copies and lifetime (native/src/jni/tensor_natives.cpp).
 * Handles are pointers to native tensors owned by {@link org.ddp4j.tensor.Tensor}; 0 means absent.
 * Errors arrive as IllegalArgumentException / IllegalStateException with the native message.
 */
public final class TensorNatives {
    static {
        NativeLibrary.load();
    }

    private TensorNatives() {}

    public static native long empty(long[] shape, int dtype, int deviceType, int deviceIndex);

    public static native long full(long[] shape, int dtype, int deviceType, int deviceIndex, double value);

    public static native long fromFloats(float[] data, int offset, long[] shape);

    public static native long fromLongs(long[] data, int offset, long[] shape);

    public static native void toFloats(long handle, float[] out);

    public static native void toLongs(long handle, long[] out);

    /** A copy on the device (type ordinal, index); the same tensor when it is already there. Needs libddp4j_cuda for GPUs. */
    public static native long toDevice(long handle, int deviceType, int deviceIndex);

    public static native long view(long handle, long[] shape);

    /** A view of elements [offset, offset + numel(shape)) of a tensor's flat data. */
    public static native long flatSlice(long handle, long offset, long[] shape);

    public static native long cloneTensor(long handle);

    public static native void copyInto(long src, long dst);

    public static native void fill(long handle, double value);

    public static native void free(long handle);

    /** {dtype ordinal, device type ordinal, device index, sizes...} of a tensor. */
    public static native long[] meta(long handle);

    public static native long bytesInUse(int deviceType);

    public static native long allocationCount(int deviceType);

    public static native long bytesCached(int deviceType);

    public static native void emptyCache(int deviceType);

    public static native long cacheLimit(int deviceType);

    public static native void setCacheLimit(int deviceType, long bytes);

    public static native long dataAddress(long handle);
}
