package org.ddp4j.cuda;

import java.util.Map;
import org.ddp4j.internal.CudaNatives;
import org.ddp4j.internal.NativeLibrary;
import org.ddp4j.internal.TensorNatives;
import org.ddp4j.tensor.Device;

/**
 * GPU queries: PyTorch's {@code torch.cuda}. The CUDA library (libddp4j_cuda.so) is loaded on the
 * first call that needs it, so a CPU-only program never touches it. Device numbers are CUDA's
 * ordinals inside {@code CUDA_VISIBLE_DEVICES}: with {@code CUDA_VISIBLE_DEVICES=2,4}, cuda:0 is
 * physical GPU 2 and cuda:1 is GPU 4.
 */
public final class Cuda {
    private Cuda() {}

    /**
     * Loads libddp4j_cuda.so if it is not loaded yet.
     *
     * @throws IllegalStateException if this build has no CUDA library
     * @throws UnsatisfiedLinkError if it cannot be loaded
     */
    public static void ensureLoaded() {
        NativeLibrary.loadCuda();
    }

    /** Whether a GPU can be used: the CUDA library is there and sees a device. Never throws. Mirrors {@code torch.cuda.is_available()}. */
    public static boolean isAvailable() {
        return unavailableReason() == null;
    }

    /** Why no GPU can be used (for messages and skipped tests), or null when one can. Never throws. */
    public static String unavailableReason() {
        try {
            ensureLoaded();
            CudaNatives.deviceCount();
            return null;
        } catch (IllegalStateException | UnsatisfiedLinkError e) {
            return e.getMessage();
        }
    }

    /**
     * Number of visible GPUs. Mirrors {@code torch.cuda.device_count()} (which returns 0 instead).
     *
     * @throws IllegalStateException "no CUDA device: ..." when there is none, or no CUDA library
     */
    public static int deviceCount() {
        ensureLoaded();
        return CudaNatives.deviceCount();
    }

    /**
     * Checks that {@code device} is a visible GPU.
     *
     * @throws IllegalArgumentException naming the visible count and CUDA_VISIBLE_DEVICES if not
     * @throws IllegalStateException when there is no GPU or no CUDA library
     */
    public static void checkDevice(Device device) {
        if (!device.isCuda()) {
            throw new IllegalArgumentException(device + " is not a CUDA device");
        }
        ensureLoaded();
        CudaNatives.checkDevice(device.index());
    }

    /**
     * Blocks until the work queued on the device (its compute stream) has finished; reports errors
     * kernels could only flag on the device (a class index out of range). Mirrors {@code torch.cuda.synchronize}.
     */
    public static void synchronize(Device device) {
        checkDevice(device);
        CudaNatives.synchronize(device.index());
    }

    /** The device's name, e.g. "NVIDIA H200". Mirrors {@code torch.cuda.get_device_name}. */
    public static String deviceName(Device device) {
        checkDevice(device);
        return CudaNatives.deviceName(device.index());
    }

    /** The device's UUID ("GPU-…", as {@code nvidia-smi -L} prints it): the same GPU gives the same UUID in every process. */
    public static String deviceUuid(Device device) {
        checkDevice(device);
        return CudaNatives.deviceUuid(device.index());
    }

    /** {free, total} bytes of the device's memory. Mirrors {@code torch.cuda.mem_get_info}. */
    public static long[] memoryInfo(Device device) {
        checkDevice(device);
        return CudaNatives.memoryInfo(device.index());
    }

    /**
     * The GPU of this process: cuda:LOCAL_RANK (cuda:0 when LOCAL_RANK is unset), as the launcher
     * and torchrun-style scripts arrange ({@code torch.cuda.set_device(local_rank)}).
     *
     * @param env the environment (System.getenv())
     * @throws IllegalArgumentException when LOCAL_RANK is not a number, or not below the number of
     *     visible GPUs (the message names LOCAL_RANK, the count and CUDA_VISIBLE_DEVICES)
     * @throws IllegalStateException when there is no GPU or no CUDA library
     */
    public static Device localDevice(Map<String, String> env) {
        return DeviceAssignment.forLocalRank(env, deviceCount());
    }

    /** Bytes held by live tensors on all GPUs. Mirrors {@code torch.cuda.memory_allocated()}. 0 before any GPU use. */
    public static long memoryAllocated() {
        return TensorNatives.bytesInUse(Device.Type.CUDA.ordinal());
    }

    /**
     * Bytes of GPU memory the caching allocator keeps for reuse (freed by closed tensors, not
     * returned to CUDA). {@code torch.cuda.memory_reserved() - memory_allocated()}.
     */
    public static long memoryCached() {
        return TensorNatives.bytesCached(Device.Type.CUDA.ordinal());
    }

    /** cudaMalloc calls so far (cache misses). A steady-state training step adds none. */
    public static long allocationCount() {
        return TensorNatives.allocationCount(Device.Type.CUDA.ordinal());
    }

    /** Returns cached GPU blocks to CUDA; live tensors are untouched. Mirrors {@code torch.cuda.empty_cache()}. */
    public static void emptyCache() {
        TensorNatives.emptyCache(Device.Type.CUDA.ordinal());
    }
}
