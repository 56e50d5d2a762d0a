package org.ddp4j.spark;

import java.util.ArrayList;
import java.util.List;

/**
 * The GPUs Spark gave the tasks of a barrier stage ({@code spark.task.resource.gpu.amount=1},
 * {@code TaskContext.resources().get("gpu")}), turned into a {@code CUDA_VISIBLE_DEVICES} under
 * which ddp4j's LOCAL_RANK→GPU rule ({@code Cuda.localDevice}: cuda:LOCAL_RANK) picks each rank's
 * own GPU: the GPUs of the host's tasks in local-rank order. The whole host's GPUs stay visible to
 * each rank, so NCCL can still reach its peers on the host directly.
 */
final class TaskGpus {
    private TaskGpus() {}

    /**
     * {@code CUDA_VISIBLE_DEVICES} for {@code rank}, or null (leave the variable alone) unless
     * every task on its host was given exactly one GPU.
     *
     * @param gpusByRank each task's GPU addresses, by rank (empty: none)
     */
    static String visibleDevices(TaskHosts hosts, List<List<String>> gpusByRank, int rank) {
        List<String> visible = new ArrayList<>();
        for (int r = 0; r < hosts.worldSize(); r++) {
            if (!hosts.host(r).equals(hosts.host(rank))) {
                continue;
            }
            if (gpusByRank.get(r).size() != 1) {
                return null;
            }
            visible.add(gpusByRank.get(r).get(0)); // ranks in order, so index = local rank
        }
        return String.join(",", visible);
    }

    /** One task's GPU addresses as {@code allGather} carries them: comma-separated, "-" for none. */
    static String encode(List<String> addresses) {
        return addresses.isEmpty() ? "-" : String.join(",", addresses);
    }

    /** The inverse of {@link #encode}. */
    static List<String> decode(String text) {
        return text.equals("-") ? List.of() : List.of(text.split(","));
    }
}
