package org.ddp4j.tensor;

import org.ddp4j.internal.CudaNatives;
import org.ddp4j.internal.NativeLibrary;

/**
 * The check every tensor creation on a GPU goes through: load the CUDA library, check the ordinal.
 * It calls the JNI layer itself rather than {@code org.ddp4j.cuda.Cuda}, which builds on tensors.
 */
final class Devices {
    private Devices() {}

    /**
     * Returns when tensors can be created on {@code device}.
     *
     * @throws IllegalStateException "no CUDA device" / no CUDA library
     * @throws IllegalArgumentException for an ordinal that is not visible
     */
    static void require(Device device) {
        if (device.isCuda()) {
            NativeLibrary.loadCuda();
            CudaNatives.checkDevice(device.index());
        }
    }
}
