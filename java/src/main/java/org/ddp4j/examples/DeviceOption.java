package org.ddp4j.examples;

import java.util.Locale;
import java.util.Map;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.cuda.DeviceAssignment;
import org.ddp4j.tensor.Device;
import picocli.CommandLine.Option;

/**
 * The demos' {@code --device auto|cpu|cuda}: where this rank trains and, from that, the backend
 * (gloo on the CPU, nccl on a GPU). A GPU rank uses cuda:LOCAL_RANK (see {@link Cuda#localDevice}).
 */
final class DeviceOption {
    @Option(names = "--device", description = "auto (a GPU when one is visible), cpu or cuda (default: ${DEFAULT-VALUE}).")
    String device = "auto";

    /**
     * The device this rank uses.
     *
     * @throws IllegalArgumentException for a value other than auto, cpu, cuda
     * @throws IllegalStateException for cuda on a machine without a GPU (or a build without CUDA)
     */
    Device resolve(Map<String, String> env) {
        return switch (device.trim().toLowerCase(Locale.ROOT)) {
            case "cpu" -> Device.CPU;
            case "cuda" -> Cuda.localDevice(env);
            case "auto" -> Cuda.isAvailable() ? Cuda.localDevice(env) : Device.CPU;
            default -> throw new IllegalArgumentException("--device " + device + ": use auto, cpu or cuda");
        };
    }

    /** nccl for a GPU, gloo for the CPU (what torch.distributed users pick). */
    static String backendFor(Device device) {
        return device.isCuda() ? "nccl" : "gloo";
    }

    /** "cpu", or "cuda:0 (NVIDIA H200, physical GPU 2)". */
    static String describe(Device device, Map<String, String> env) {
        if (!device.isCuda()) {
            return device.toString();
        }
        return device + " (" + Cuda.deviceName(device) + ", physical GPU "
                + DeviceAssignment.physicalDevice(env, device.index()) + ")";
    }
}
