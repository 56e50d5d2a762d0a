package org.ddp4j.distributed.environment;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.ddp4j.cuda.Cuda;

/**
 * The launcher's option defaults from the cluster it runs in (torchrun's options as the cluster
 * gives them), for options not given on the command line; read here, beside {@link ClusterEnvironment}
 * (the workers' variables for {@code env://}), so SLURM and Kubeflow are read in one package. In order:
 *
 * <ol>
 *   <li>{@code PET_*} variables, as torchrun reads its options from them (Kubeflow's PyTorchJob sets
 *       them in each pod): PET_NPROC_PER_NODE (a number, {@code auto}, {@code cpu} or {@code gpu}),
 *       PET_NNODES ({@code N} or {@code N:N}; the launcher is not elastic), PET_NODE_RANK,
 *       PET_MASTER_ADDR, PET_MASTER_PORT, PET_MAX_RESTARTS;</li>
 *   <li>in a SLURM job step (one launcher per node: {@code srun --ntasks-per-node=1}): --nnodes from
 *       SLURM_STEP_NUM_NODES / SLURM_NNODES / SLURM_JOB_NUM_NODES, --node-rank from SLURM_NODEID,
 *       --master-addr and --master-port as env:// derives them ({@link ClusterEnvironment}:
 *       MASTER_ADDR / MASTER_PORT when set, else the step's first node and 10000 + job id % 20000);</li>
 *   <li>the option's own default.</li>
 * </ol>
 *
 * A malformed value is an {@link IllegalArgumentException} (or {@link IllegalStateException} for a
 * SLURM step that cannot be read) naming the variable and the option that overrides it; the launcher
 * turns it into a usage error.
 */
public final class LaunchEnvironment {
    private final Map<String, String> env;
    /** option to "value (from SOURCE)", for the notice the launcher prints. */
    private final Map<String, String> used = new LinkedHashMap<>();

    /** @param env the launcher's environment, e.g. {@code System.getenv()} */
    public LaunchEnvironment(Map<String, String> env) {
        this.env = env;
    }

    /**
     * The cluster's value for one launcher option, or null when the cluster gives none.
     *
     * @param option the option's long name: {@code --nproc-per-node}, {@code --nnodes},
     *     {@code --node-rank}, {@code --master-addr}, {@code --master-port} or {@code --max-restarts};
     *     any other name gives null
     * @throws IllegalArgumentException when a variable is malformed, naming it and {@code option}
     * @throws IllegalStateException when a SLURM step's variables cannot be read, naming the fix
     */
    public String defaultValue(String option) {
        switch (option) {
            case "--nproc-per-node":
                return pet(option, "PET_NPROC_PER_NODE", this::nprocPerNode, () -> null);
            case "--nnodes":
                return pet(option, "PET_NNODES", this::nnodes, () -> slurm(option, SlurmEnvironment::numNodes));
            case "--node-rank":
                return pet(option, "PET_NODE_RANK", v -> count(v, 0), () -> slurm(option, this::slurmNodeRank));
            case "--master-addr":
                return pet(option, "PET_MASTER_ADDR", v -> v,
                        () -> slurm(option, e -> ClusterEnvironment.resolve(e).get("MASTER_ADDR")));
            case "--master-port":
                return pet(option, "PET_MASTER_PORT", this::port,
                        () -> slurm(option, e -> ClusterEnvironment.resolve(e).get("MASTER_PORT")));
            case "--max-restarts":
                return pet(option, "PET_MAX_RESTARTS", v -> count(v, 0), () -> null);
            default:
                return null;
        }
    }

    /**
     * What came from the cluster, for one line on stderr, e.g. {@code "--nnodes 2 (SLURM_NNODES)"};
     * empty when nothing did.
     */
    public List<String> used() {
        List<String> out = new ArrayList<>();
        used.forEach((option, value) -> out.add(option + " " + value));
        return out;
    }

    private String pet(String option, String variable, UnaryOperator<String> parser, Supplier<String> otherwise) {
        String raw = env.get(variable);
        if (raw == null || raw.isBlank()) {
            return otherwise.get();
        }
        String value;
        try {
            value = parser.apply(raw.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(variable + "=\"" + raw.trim() + "\" " + e.getMessage() + "; pass "
                    + option + " to override it");
        }
        used.put(option, value + " (" + variable + ")");
        return value;
    }

    private String slurm(String option, Function<Map<String, String>, Object> fromSlurm) {
        if (!SlurmEnvironment.isStep(env)) {
            return null;
        }
        Object value;
        try {
            value = fromSlurm.apply(env);
        } catch (IllegalStateException e) {
            throw new IllegalStateException(e.getMessage() + " (this launcher runs in a SLURM job step; pass "
                    + option + " to choose it yourself)");
        }
        if (value == null) {
            return null;
        }
        used.put(option, value + " (SLURM job " + env.getOrDefault("SLURM_JOB_ID", env.get("SLURM_JOBID")) + ")");
        return String.valueOf(value);
    }

    /** SLURM_NODEID, once it is clear that srun started one launcher per node. */
    private int slurmNodeRank(Map<String, String> e) {
        int tasks = SlurmEnvironment.numTasks(e);
        int nodes = SlurmEnvironment.numNodes(e);
        if (tasks != nodes) {
            throw new IllegalStateException("srun started " + tasks + " launchers on " + nodes + " node(s), but the"
                    + " launcher runs once per node and starts --nproc-per-node workers itself: use srun"
                    + " --ntasks-per-node=1 (or srun -n 2 java ... MainClass without the launcher: each task is"
                    + " then one rank)");
        }
        return SlurmEnvironment.nodeId(e);
    }

    /** torchrun's --nproc-per-node values: a number, auto (GPUs, else CPU cores), cpu, gpu. */
    private String nprocPerNode(String v) {
        switch (v) {
            case "cpu":
                return Integer.toString(Runtime.getRuntime().availableProcessors());
            case "gpu":
                if (!Cuda.isAvailable()) {
                    throw new IllegalArgumentException("asks for one worker per GPU, but no GPU is usable ("
                            + Cuda.unavailableReason() + ")");
                }
                return Integer.toString(Cuda.deviceCount());
            case "auto":
                return Integer.toString(Cuda.isAvailable() ? Cuda.deviceCount() : Runtime.getRuntime().availableProcessors());
            default:
                return count(v, 1);
        }
    }

    /** N, or torchrun's elastic MIN:MAX when MIN = MAX. */
    private String nnodes(String v) {
        int colon = v.indexOf(':');
        if (colon < 0) {
            return count(v, 1);
        }
        String min = count(v.substring(0, colon).trim(), 1);
        String max = count(v.substring(colon + 1).trim(), 1);
        if (!min.equals(max)) {
            throw new IllegalArgumentException("is an elastic range, which ddp4j's launcher does not support: give"
                    + " a fixed number of nodes (N or N:N)");
        }
        return min;
    }

    private String port(String v) {
        String p = count(v, 1);
        if (Integer.parseInt(p) > 65535) {
            throw new IllegalArgumentException("is not a port number (1..65535)");
        }
        return p;
    }

    private static String count(String v, int min) {
        try {
            int n = Integer.parseInt(v);
            if (n >= min) {
                return Integer.toString(n);
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("is not a number >= " + min);
    }
}
