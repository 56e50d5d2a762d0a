package org.ddp4j.distributed.environment;

import java.util.List;
import java.util.Map;

/**
 * What SLURM tells a task of a job step started by {@code srun}: its rank in the step, the step's
 * size, its node, and where rank 0 runs. Each getter reads the step's variable first, then the
 * job-wide one, as srun sets both. A batch script (no {@code srun}) is not a step: there
 * SLURM_PROCID is 0 and SLURM_NTASKS the job's size, but no other task is coming.
 */
public final class SlurmEnvironment {
    /** First port that {@link #portForJob} hands out. */
    public static final int PORT_BASE = 10_000;

    /**
     * How many ports {@link #portForJob} cycles through: 10000..29999, below Linux's ephemeral
     * range (32768 and up), so that no outgoing connection holds the port.
     */
    public static final int PORT_SPAN = 20_000;

    private SlurmEnvironment() {}

    /** SLURM did not set a variable at all (as opposed to setting it to something malformed). */
    static final class Missing extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        Missing(String message) {
            super(message);
        }
    }

    /**
     * Whether this process is a task of a SLURM job step: srun set SLURM_PROCID and SLURM_STEP_ID
     * (SLURM_STEPID before SLURM 20). A batch script or an salloc shell is not.
     */
    public static boolean isStep(Map<String, String> env) {
        return present(env, "SLURM_PROCID") && (present(env, "SLURM_STEP_ID") || present(env, "SLURM_STEPID"));
    }

    /** Whether this process runs inside a SLURM job at all (SLURM_JOB_ID or SLURM_JOBID set). */
    public static boolean isJob(Map<String, String> env) {
        return present(env, "SLURM_JOB_ID") || present(env, "SLURM_JOBID");
    }

    /**
     * This task's rank in the step: SLURM_PROCID.
     *
     * @throws IllegalStateException when it is missing or not a number &gt;= 0
     */
    public static int procId(Map<String, String> env) {
        return number(env, 0, "set RANK", "SLURM_PROCID");
    }

    /**
     * The step's task count: SLURM_STEP_NUM_TASKS, else SLURM_NTASKS, else SLURM_NPROCS.
     *
     * @throws IllegalStateException when none is set, or the first set is not a number &gt;= 1
     */
    public static int numTasks(Map<String, String> env) {
        return number(env, 1, "set WORLD_SIZE", NUM_TASKS);
    }

    /**
     * The variable that {@link #numTasks} reads: the first of SLURM_STEP_NUM_TASKS, SLURM_NTASKS and
     * SLURM_NPROCS that is set, or null when none is (for messages that name where the world size came from).
     */
    public static String numTasksVariable(Map<String, String> env) {
        return firstPresent(env, NUM_TASKS);
    }

    private static final String[] NUM_TASKS = {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"};

    /**
     * This task's index on its node: SLURM_LOCALID.
     *
     * @throws IllegalStateException when it is missing or not a number &gt;= 0
     */
    public static int localId(Map<String, String> env) {
        return number(env, 0, "set LOCAL_RANK", "SLURM_LOCALID");
    }

    /**
     * This node's index in the step: SLURM_NODEID.
     *
     * @throws IllegalStateException when it is missing or not a number &gt;= 0
     */
    public static int nodeId(Map<String, String> env) {
        return number(env, 0, "pass --node-rank", "SLURM_NODEID");
    }

    /**
     * The step's node count: SLURM_STEP_NUM_NODES, else SLURM_NNODES, else SLURM_JOB_NUM_NODES.
     *
     * @throws IllegalStateException when none is set, or the first set is not a number &gt;= 1
     */
    public static int numNodes(Map<String, String> env) {
        return number(env, 1, "pass --nnodes", "SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES");
    }

    /**
     * How many tasks of the step run on this node: entry SLURM_NODEID of SLURM_STEP_TASKS_PER_NODE
     * (else SLURM_TASKS_PER_NODE), compressed as {@code 2(x3),1}; else SLURM_NTASKS_PER_NODE.
     *
     * @throws IllegalStateException when none is set or the value is malformed
     */
    public static int tasksOnThisNode(Map<String, String> env) {
        String name = firstPresent(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE");
        if (name == null) {
            return number(env, 1, "set LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE");
        }
        int node = nodeId(env);
        try {
            return SlurmTasksPerNode.forNode(env.get(name), node);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(name + "=\"" + env.get(name).trim() + "\" is not SLURM's tasks per node"
                    + " for node " + node + " (" + e.getMessage() + "); set LOCAL_WORLD_SIZE to override it", e);
        }
    }

    /**
     * The host of rank 0: the first host of SLURM_STEP_NODELIST, else SLURM_NODELIST, else
     * SLURM_JOB_NODELIST (expanded by {@link SlurmHostList}; no scontrol needed). SLURM's block
     * and cyclic distributions put task 0 on the step's first node.
     *
     * @throws IllegalStateException when none is set or the list is malformed
     */
    public static String firstHost(Map<String, String> env) {
        String name = firstPresent(env, "SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST");
        if (name == null) {
            throw new Missing("SLURM set none of SLURM_STEP_NODELIST, SLURM_NODELIST and"
                    + " SLURM_JOB_NODELIST, so rank 0's host is unknown: set MASTER_ADDR");
        }
        try {
            return SlurmHostList.first(env.get(name));
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(name + "=\"" + env.get(name).trim() + "\" is not a SLURM host list ("
                    + e.getMessage() + "); set MASTER_ADDR to override it", e);
        }
    }

    /**
     * The store's port for this job: {@link #portForJob} of SLURM_JOB_ID (else SLURM_JOBID).
     *
     * @throws IllegalStateException when neither is set or the id is not a number
     */
    public static int masterPort(Map<String, String> env) {
        String name = firstPresent(env, "SLURM_JOB_ID", "SLURM_JOBID");
        String raw = name == null ? null : env.get(name).trim();
        long id;
        try {
            id = raw == null ? -1 : Long.parseLong(raw);
        } catch (NumberFormatException e) {
            id = -1;
        }
        if (id < 0) {
            if (name == null) {
                throw new Missing("SLURM set neither SLURM_JOB_ID nor SLURM_JOBID, so no port can be derived:"
                        + " set MASTER_PORT");
            }
            throw new IllegalStateException(name + "=\"" + raw + "\" is not a job id (a number >= 0): set MASTER_PORT");
        }
        return portForJob(id);
    }

    /**
     * The port a job's store uses unless MASTER_PORT is set: {@code 10000 + jobId % 20000}. Jobs
     * whose ids differ by less than 20000 never share a port on a node; two steps of one job that
     * run at the same time do, and need MASTER_PORT.
     *
     * @param jobId SLURM's job id, &gt;= 0
     * @return a port in 10000..29999
     */
    public static int portForJob(long jobId) {
        if (jobId < 0) {
            throw new IllegalArgumentException("job id must be >= 0, got " + jobId);
        }
        return PORT_BASE + (int) (jobId % PORT_SPAN);
    }

    private static int number(Map<String, String> env, int min, String overriddenBy, String... names) {
        String name = firstPresent(env, names);
        if (name == null) {
            throw new Missing((names.length == 1 ? "SLURM did not set " + names[0]
                    : "SLURM set none of " + String.join(", ", List.of(names))) + ": " + overriddenBy + " yourself");
        }
        String raw = env.get(name).trim();
        try {
            int v = Integer.parseInt(raw);
            if (v >= min) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalStateException(name + "=\"" + raw + "\" is not a number >= " + min + " (SLURM sets it for"
                + " each task of a step); " + overriddenBy + " to override it");
    }

    private static String firstPresent(Map<String, String> env, String... names) {
        for (String name : names) {
            if (present(env, name)) {
                return name;
            }
        }
        return null;
    }

    private static boolean present(Map<String, String> env, String name) {
        String v = env.get(name);
        return v != null && !v.isBlank();
    }
}
