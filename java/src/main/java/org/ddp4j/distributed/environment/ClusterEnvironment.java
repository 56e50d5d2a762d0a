package org.ddp4j.distributed.environment;

import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The torch variables that {@code env://} reads (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, and
 * LOCAL_RANK, LOCAL_WORLD_SIZE for the GPU), completed from the cluster's own variables when the
 * process was started by a cluster rather than by ddp4j's launcher:
 *
 * <ul>
 *   <li>a task of a SLURM job step ({@code srun}, see {@link SlurmEnvironment}): RANK from
 *       SLURM_PROCID, WORLD_SIZE from SLURM_NTASKS, LOCAL_RANK from SLURM_LOCALID,
 *       LOCAL_WORLD_SIZE from SLURM_TASKS_PER_NODE, MASTER_ADDR the first host of the step's node
 *       list, MASTER_PORT {@code 10000 + job id % 20000};</li>
 *   <li>a Kubeflow PyTorchJob pod: its operator already sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE
 *       and RANK, so nothing is derived.</li>
 * </ul>
 *
 * <p>A torch variable that is set always wins, each on its own: {@code MASTER_PORT=12345 srun ...}
 * keeps the rest from SLURM. PyTorch itself reads none of SLURM's variables; this is what the
 * usual SLURM wrappers of torch scripts do.
 */
public final class ClusterEnvironment {
    private ClusterEnvironment() {}

    /**
     * {@code env} with each missing torch variable taken from the cluster: SLURM's when this
     * process is a task of a job step, else nothing (the same map is returned).
     *
     * @param env the process environment, e.g. {@code System.getenv()}
     * @return an unmodifiable view with the derived variables added, or {@code env} itself
     * @throws IllegalStateException when a needed SLURM variable is malformed (naming it, its value,
     *     and the torch variable that overrides it)
     */
    public static Map<String, String> resolve(Map<String, String> env) {
        if (!SlurmEnvironment.isStep(env)) {
            return env;
        }
        Map<String, String> out = new HashMap<>(env);
        for (Map.Entry<String, Function<Map<String, String>, Object>> e : SLURM.entrySet()) {
            String name = e.getKey();
            if (isSet(env, name)) {
                continue;
            }
            try {
                out.put(name, String.valueOf(e.getValue().apply(env)));
            } catch (SlurmEnvironment.Missing missing) {
                // left unset: env:// names what is missing, and missingHint says what SLURM lacked
            }
        }
        return Collections.unmodifiableMap(out);
    }

    /**
     * A sentence to add to the "variables missing" error of env:// when the cluster explains why,
     * else "". In a SLURM job outside a job step (a batch script, an salloc shell) the process
     * must be started by {@code srun}; in a step, it names the SLURM variables that were missing.
     *
     * @param env the process environment, as given to {@link #resolve} or as it returned it
     */
    public static String missingHint(Map<String, String> env) {
        if (SlurmEnvironment.isStep(env)) {
            StringBuilder lacking = new StringBuilder();
            for (Map.Entry<String, Function<Map<String, String>, Object>> e : SLURM.entrySet()) {
                if (REQUIRED.contains(e.getKey()) && !isSet(env, e.getKey())) {
                    try {
                        e.getValue().apply(env);
                    } catch (SlurmEnvironment.Missing missing) {
                        lacking.append(' ').append(missing.getMessage()).append('.');
                    }
                }
            }
            return lacking.length() == 0 ? "" : " This is a SLURM job step, but:" + lacking;
        }
        if (SlurmEnvironment.isJob(env)) {
            String job = isSet(env, "SLURM_JOB_ID") ? env.get("SLURM_JOB_ID") : env.get("SLURM_JOBID");
            return " This process runs in SLURM job " + job.trim() + " but not in a job step (SLURM_STEP_ID is not"
                    + " set): start it with srun (e.g. srun -n 2 java -cp ... my.Main), which gives each task its"
                    + " rank (SLURM_PROCID) and the world size (SLURM_NTASKS).";
        }
        return "";
    }

    /**
     * Where {@code resolve(processEnv).get(name)} came from, for messages that must say it: {@code "RANK=5"} when the
     * variable itself is set, {@code "SLURM_PROCID=5"} when a SLURM job step supplied it (RANK from SLURM_PROCID,
     * WORLD_SIZE from SLURM_STEP_NUM_TASKS, SLURM_NTASKS or SLURM_NPROCS, LOCAL_RANK from SLURM_LOCALID), else null.
     *
     * @param processEnv the environment as given to {@link #resolve} (not its result)
     * @param name RANK, WORLD_SIZE or LOCAL_RANK (any other name is named only when it is set itself)
     */
    public static String origin(Map<String, String> processEnv, String name) {
        if (isSet(processEnv, name)) {
            return name + "=" + processEnv.get(name).trim();
        }
        if (!SlurmEnvironment.isStep(processEnv)) {
            return null;
        }
        String slurm = switch (name) {
            case "RANK" -> "SLURM_PROCID";
            case "WORLD_SIZE" -> SlurmEnvironment.numTasksVariable(processEnv);
            case "LOCAL_RANK" -> "SLURM_LOCALID";
            default -> null;
        };
        return slurm == null || !isSet(processEnv, slurm) ? null : slurm + "=" + processEnv.get(slurm).trim();
    }

    /** Each torch variable and how a SLURM step supplies it, in the order errors name them. */
    private static final Map<String, Function<Map<String, String>, Object>> SLURM = slurmSources();

    private static final Set<String> REQUIRED = Set.of("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK");

    private static Map<String, Function<Map<String, String>, Object>> slurmSources() {
        Map<String, Function<Map<String, String>, Object>> m = new LinkedHashMap<>();
        m.put("MASTER_ADDR", SlurmEnvironment::firstHost);
        m.put("MASTER_PORT", SlurmEnvironment::masterPort);
        m.put("WORLD_SIZE", SlurmEnvironment::numTasks);
        m.put("RANK", SlurmEnvironment::procId);
        m.put("LOCAL_RANK", SlurmEnvironment::localId);
        m.put("LOCAL_WORLD_SIZE", SlurmEnvironment::tasksOnThisNode);
        return Collections.unmodifiableMap(m);
    }

    private static boolean isSet(Map<String, String> env, String name) {
        String v = env.get(name);
        return v != null && !v.isBlank();
    }
}
