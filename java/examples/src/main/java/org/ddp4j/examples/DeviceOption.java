package org.ddp4j.examples;

import java.util.Locale;
import java.util.Map;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.cuda.DeviceAssignment;
import org.ddp4j.distributed.environment.ClusterEnvironment;
import org.ddp4j.tensor.Device;
import picocli.CommandLine.Option;

/**
 * The demos' {@code --device auto|cpu|cuda}: where this rank trains and, from that, the backend
 * (gloo on the CPU, nccl on a GPU). A GPU rank uses cuda:LOCAL_RANK (see {@link Cuda#localDevice}).
 */
final class DeviceOption {
    @Option(names = "--device", description = "auto (a GPU per process when this node has one for each), cpu or cuda "
            + "(default: ${DEFAULT-VALUE}).")
    String device = "auto";

    /**
     * The device this rank uses.
     *
     * @throws IllegalArgumentException for a value other than auto, cpu, cuda
     * @throws IllegalStateException for cuda on a machine without a GPU (or a build without CUDA)
     */
    Device resolve(Map<String, String> processEnv) {
        Map<String, String> env = ClusterEnvironment.resolve(processEnv); // under srun: SLURM_LOCALID, tasks per node
        return switch (device.trim().toLowerCase(Locale.ROOT)) {
            case "cpu" -> Device.CPU;
            case "cuda" -> Cuda.localDevice(env);
            case "auto" -> enoughGpus(env) ? Cuda.localDevice(env) : Device.CPU;
            default -> throw new IllegalArgumentException("--device " + device + ": use auto, cpu or cuda");
        };
    }

    /**
     * Whether every process on this node gets its own GPU (LOCAL_WORLD_SIZE, 1 when unset, at most
     * the visible count). Every rank of a node decides alike, so they agree on the backend.
     */
    private static boolean enoughGpus(Map<String, String> env) {
        if (!Cuda.isAvailable()) {
            return false;
        }
        int perNode = 1;
        try {
            perNode = Integer.parseInt(env.getOrDefault("LOCAL_WORLD_SIZE", "1").trim());
        } catch (NumberFormatException e) {
            // not set by a launcher: one process
        }
        return perNode <= Cuda.deviceCount();
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
                + DeviceAssignment.physicalDevice(ClusterEnvironment.resolve(env), device.index()) + ")";
    }
}
