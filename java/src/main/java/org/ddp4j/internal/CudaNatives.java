package org.ddp4j.internal;

/**
 * JNI declarations for device queries (native/src/jni/cuda/cuda_natives.cpp, in libddp4j_cuda.so).
 * Call {@link NativeLibrary#loadCuda()} first; {@link org.ddp4j.cuda.Cuda} does. Errors arrive as
 * IllegalStateException ("no CUDA device: ...") or IllegalArgumentException (bad ordinal).
 */
public final class CudaNatives {
    private CudaNatives() {}

    /** Visible devices; throws IllegalStateException when there is none. */
    public static native int deviceCount();

    /** Throws IllegalArgumentException unless {@code device} is a visible ordinal. */
    public static native void checkDevice(int device);

    /** Waits for the device's compute stream; reports deferred kernel errors. */
    public static native void synchronize(int device);

    public static native String deviceName(int device);

    /** "GPU-xxxxxxxx-...": the device's UUID, as nvidia-smi -L prints it. */
    public static native String deviceUuid(int device);

    /** {free, total} bytes of device memory. */
    public static native long[] memoryInfo(int device);
}
