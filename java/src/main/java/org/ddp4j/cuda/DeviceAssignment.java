package org.ddp4j.cuda;

import java.util.Map;
import org.ddp4j.tensor.Device;

/**
 * Which GPU a process uses: local rank r gets cuda:r, an ordinal inside CUDA_VISIBLE_DEVICES, so a
 * launcher started with {@code CUDA_VISIBLE_DEVICES=2,4} puts local rank 0 on physical GPU 2 and
 * local rank 1 on GPU 4 (workers inherit the variable). Pure logic, testable without a GPU.
 */
public final class DeviceAssignment {
    private DeviceAssignment() {}

    /**
     * cuda:LOCAL_RANK, checked against {@code visibleCount}.
     *
     * @throws IllegalArgumentException for a malformed or out-of-range LOCAL_RANK
     */
    public static Device forLocalRank(Map<String, String> env, int visibleCount) {
        String raw = env.get("LOCAL_RANK");
        int localRank = 0;
        if (raw != null && !raw.isBlank()) {
            try {
                localRank = Integer.parseInt(raw.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("LOCAL_RANK=\"" + raw + "\" is not a number (the launcher sets it "
                        + "to the process's index on its node)");
            }
        }
        if (localRank < 0 || localRank >= visibleCount) {
            String visible = env.get("CUDA_VISIBLE_DEVICES");
            throw new IllegalArgumentException("LOCAL_RANK=" + localRank + " has no GPU: " + visibleCount
                    + " GPU(s) are visible" + (visible != null ? " (CUDA_VISIBLE_DEVICES=" + visible + ")" : "")
                    + " and local rank r uses cuda:r; start at most " + visibleCount + " process(es) on this node "
                    + "(--nproc-per-node " + visibleCount + ") or make more GPUs visible with CUDA_VISIBLE_DEVICES");
        }
        return Device.cuda(localRank);
    }

    /**
     * The physical GPU behind ordinal {@code ordinal}: the ordinal-th entry of CUDA_VISIBLE_DEVICES
     * (a number or a UUID), or the ordinal itself when the variable is unset. For messages and logs.
     *
     * @throws IllegalArgumentException when the ordinal is beyond the list
     */
    public static String physicalDevice(Map<String, String> env, int ordinal) {
        String visible = env.get("CUDA_VISIBLE_DEVICES");
        if (visible == null) {
            return Integer.toString(ordinal);
        }
        String[] ids = visible.isBlank() ? new String[0] : visible.split(",");
        if (ordinal < 0 || ordinal >= ids.length) {
            throw new IllegalArgumentException("cuda:" + ordinal + " is not visible: CUDA_VISIBLE_DEVICES=" + visible
                    + " lists " + ids.length + " GPU(s)");
        }
        return ids[ordinal].trim();
    }
}
