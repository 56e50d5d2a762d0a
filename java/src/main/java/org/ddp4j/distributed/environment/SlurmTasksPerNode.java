package org.ddp4j.distributed.environment;

import java.util.ArrayList;
import java.util.List;

/**
 * Expands SLURM's compressed tasks-per-node counts ({@code SLURM_TASKS_PER_NODE},
 * {@code SLURM_STEP_TASKS_PER_NODE}): comma-separated counts, each optionally repeated as
 * {@code count(xN)}. {@code "2(x3),1"} is 2, 2, 2, 1 tasks on nodes 0..3.
 */
public final class SlurmTasksPerNode {
    private SlurmTasksPerNode() {}

    /**
     * The task count of every node, in node order (SLURM_NODEID).
     *
     * @param compressed e.g. {@code "2(x3),1"}
     * @return e.g. {@code [2, 2, 2, 1]}
     * @throws IllegalArgumentException for an empty value, a count or repeat that is not a positive
     *     number, or more than 2^20 nodes
     */
    public static List<Integer> expand(String compressed) {
        if (compressed == null || compressed.isBlank()) {
            throw new IllegalArgumentException("empty tasks-per-node value");
        }
        String text = compressed.trim();
        List<Integer> out = new ArrayList<>();
        for (String item : text.split(",", -1)) {
            String s = item.trim();
            int repeat = 1;
            int paren = s.indexOf('(');
            if (paren >= 0) {
                if (!s.endsWith(")") || !s.startsWith("x", paren + 1)) {
                    throw new IllegalArgumentException("\"" + s + "\" in tasks per node \"" + text
                            + "\" is not COUNT or COUNT(xREPEAT)");
                }
                repeat = positive(s.substring(paren + 2, s.length() - 1).trim(), s, text);
                s = s.substring(0, paren).trim();
            }
            int count = positive(s, item.trim(), text);
            if ((long) out.size() + repeat > SlurmHostList.MAX_HOSTS) {
                throw new IllegalArgumentException("tasks per node \"" + text + "\" names more than "
                        + SlurmHostList.MAX_HOSTS + " nodes");
            }
            for (int i = 0; i < repeat; i++) {
                out.add(count);
            }
        }
        return out;
    }

    /**
     * The task count of one node.
     *
     * @param compressed e.g. {@code "2(x3),1"}
     * @param nodeId the node's index in the step (SLURM_NODEID)
     * @return e.g. 1 for node 3 of {@code "2(x3),1"}
     * @throws IllegalArgumentException as {@link #expand(String)}, or when the value has no entry for {@code nodeId}
     */
    public static int forNode(String compressed, int nodeId) {
        List<Integer> counts = expand(compressed);
        if (nodeId < 0 || nodeId >= counts.size()) {
            throw new IllegalArgumentException("tasks per node \"" + compressed.trim() + "\" covers " + counts.size()
                    + " node(s), not node " + nodeId);
        }
        return counts.get(nodeId);
    }

    private static int positive(String digits, String item, String text) {
        boolean ok = !digits.isEmpty() && digits.length() <= 9 && digits.chars().allMatch(c -> c >= '0' && c <= '9');
        int v = ok ? Integer.parseInt(digits) : 0;
        if (v < 1) {
            throw new IllegalArgumentException("\"" + item + "\" in tasks per node \"" + text
                    + "\" is not COUNT or COUNT(xREPEAT) with positive numbers");
        }
        return v;
    }
}
