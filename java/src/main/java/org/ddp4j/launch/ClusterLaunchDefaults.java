package org.ddp4j.launch;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.distributed.ClusterEnvironment;
import org.ddp4j.distributed.SlurmEnvironment;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

/**
 * The launcher's option defaults from the cluster it runs in, for options not given on the command
 * line. In order:
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
 * A malformed value is a usage error naming the variable and the option that overrides it.
 */
final class ClusterLaunchDefaults implements CommandLine.IDefaultValueProvider {
    private final Map<String, String> env;
    /** option to "value (from SOURCE)", for the notice the launcher prints. */
    private final Map<String, String> used = new LinkedHashMap<>();

    ClusterLaunchDefaults(Map<String, String> env) {
        this.env = env;
    }

    @Override
    public String defaultValue(ArgSpec arg) {
        if (!(arg instanceof OptionSpec)) {
            return null;
        }
        OptionSpec option = (OptionSpec) arg;
        String name = option.names()[0];
        CommandLine cl = option.command().commandLine();
        try {
            switch (name) {
                case "--nproc-per-node":
                    return pet(name, "PET_NPROC_PER_NODE", this::nprocPerNode, () -> null);
                case "--nnodes":
                    return pet(name, "PET_NNODES", this::nnodes, () -> slurm(name, SlurmEnvironment::numNodes));
                case "--node-rank":
                    return pet(name, "PET_NODE_RANK", v -> count(v, 0), () -> slurm(name, this::slurmNodeRank));
                case "--master-addr":
                    return pet(name, "PET_MASTER_ADDR", v -> v,
                            () -> slurm(name, e -> ClusterEnvironment.resolve(e).get("MASTER_ADDR")));
                case "--master-port":
                    return pet(name, "PET_MASTER_PORT", this::port,
                            () -> slurm(name, e -> ClusterEnvironment.resolve(e).get("MASTER_PORT")));
                case "--max-restarts":
                    return pet(name, "PET_MAX_RESTARTS", v -> count(v, 0), () -> null);
                default:
                    return null;
            }
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new ParameterException(cl, e.getMessage());
        }
    }

    /**
     * What came from the cluster, for one line on stderr, e.g. {@code "--nnodes 2 (SLURM_NNODES)"};
     * empty when nothing did.
     */
    List<String> used() {
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
