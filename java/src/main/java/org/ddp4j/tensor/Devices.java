package org.ddp4j.tensor;

import org.ddp4j.cuda.Cuda;

/** The check every tensor creation on a GPU goes through: load the CUDA library, check the ordinal. */
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
            Cuda.checkDevice(device);
        }
    }
}
