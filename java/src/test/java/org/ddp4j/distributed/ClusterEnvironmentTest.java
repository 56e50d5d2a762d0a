package org.ddp4j.distributed;

import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.ddp4j.tensor.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ddp4j.distributed.environment.ClusterEnvironment;
import org.ddp4j.distributed.environment.SlurmEnvironment;

/**
 * env:// under clusters: a task of a SLURM job step gets the torch variables from SLURM's, each
 * torch variable that is set wins, and a Kubeflow PyTorchJob pod's variables are used as set.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ClusterEnvironmentTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    /** What srun gives task {@code procId} of a 4-task step on node01 (3 tasks) and node02 (1). */
    static Map<String, String> srunTask(int procId, int nodeId, int localId) {
        Map<String, String> env = new HashMap<>();
        env.put("PATH", "/usr/bin");
        env.put("SLURM_JOB_ID", "123456");
        env.put("SLURM_JOBID", "123456");
        env.put("SLURM_STEP_ID", "0");
        env.put("SLURM_STEPID", "0");
        env.put("SLURM_PROCID", Integer.toString(procId));
        env.put("SLURM_LOCALID", Integer.toString(localId));
        env.put("SLURM_NODEID", Integer.toString(nodeId));
        env.put("SLURM_NTASKS", "4");
        env.put("SLURM_NPROCS", "4");
        env.put("SLURM_STEP_NUM_TASKS", "4");
        env.put("SLURM_NNODES", "2");
        env.put("SLURM_STEP_NUM_NODES", "2");
        env.put("SLURM_JOB_NUM_NODES", "3");
        env.put("SLURM_STEP_NODELIST", "node[01-02]");
        env.put("SLURM_NODELIST", "node[01-02]");
        env.put("SLURM_JOB_NODELIST", "node[01-02],gpu7");
        env.put("SLURM_STEP_TASKS_PER_NODE", "3,1");
        env.put("SLURM_TASKS_PER_NODE", "3,1");
        return env;
    }

    @Test
    void srunTaskGetsEveryTorchVariableFromSlurm() {
        Map<String, String> env = ClusterEnvironment.resolve(srunTask(3, 1, 0));
        assertEquals("3", env.get("RANK"));
        assertEquals("4", env.get("WORLD_SIZE"));
        assertEquals("0", env.get("LOCAL_RANK"));
        assertEquals("1", env.get("LOCAL_WORLD_SIZE"), "node 1 of \"3,1\" runs one task");
        assertEquals("node01", env.get("MASTER_ADDR"));
        assertEquals("13456", env.get("MASTER_PORT"), "10000 + 123456 % 20000");
        assertEquals("/usr/bin", env.get("PATH"), "everything else passes through");

        Map<String, String> first = ClusterEnvironment.resolve(srunTask(1, 0, 1));
        assertEquals("1", first.get("RANK"));
        assertEquals("1", first.get("LOCAL_RANK"));
        assertEquals("3", first.get("LOCAL_WORLD_SIZE"));
        assertThrows(UnsupportedOperationException.class, () -> env.put("RANK", "0"), "a read-only view");
    }

    @Test
    void torchVariablesWinEachOnItsOwn() {
        Map<String, String> task = srunTask(2, 0, 2);
        task.put("MASTER_PORT", "12345");
        task.put("MASTER_ADDR", "login1");
        task.put("LOCAL_WORLD_SIZE", "8");
        Map<String, String> env = ClusterEnvironment.resolve(task);
        assertEquals("12345", env.get("MASTER_PORT"));
        assertEquals("login1", env.get("MASTER_ADDR"));
        assertEquals("8", env.get("LOCAL_WORLD_SIZE"));
        assertEquals("2", env.get("RANK"), "the rest still from SLURM");
        assertEquals("4", env.get("WORLD_SIZE"));

        Map<String, String> all = new HashMap<>(srunTask(2, 0, 2));
        all.putAll(Map.of("RANK", "0", "WORLD_SIZE", "1", "LOCAL_RANK", "0", "LOCAL_WORLD_SIZE", "1",
                "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500"));
        Map<String, String> resolved = ClusterEnvironment.resolve(all);
        for (String name : List.of("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")) {
            assertEquals(all.get(name), resolved.get(name), name + " as the launcher set it");
        }
        task.put("RANK", " ");
        assertEquals("2", ClusterEnvironment.resolve(task).get("RANK"), "a blank variable counts as unset");
    }

    @Test
    void stepVariablesComeBeforeTheJobsAndOldNamesStillWork() {
        Map<String, String> task = srunTask(0, 0, 0);
        task.put("SLURM_NTASKS", "8"); // the job's; the step has 4
        task.put("SLURM_STEP_NODELIST", "gpu[3-4]");
        task.put("SLURM_TASKS_PER_NODE", "4(x2)");
        Map<String, String> env = ClusterEnvironment.resolve(task);
        assertEquals("4", env.get("WORLD_SIZE"));
        assertEquals("gpu3", env.get("MASTER_ADDR"));
        assertEquals("3", env.get("LOCAL_WORLD_SIZE"));

        // only what older SLURMs, or a job without --ntasks-per-node layouts, set
        Map<String, String> old = new HashMap<>(Map.of("SLURM_JOBID", "20001", "SLURM_STEPID", "3", "SLURM_PROCID", "1",
                "SLURM_NPROCS", "2", "SLURM_LOCALID", "1", "SLURM_NODEID", "0", "SLURM_JOB_NODELIST", "c[7-8]",
                "SLURM_NTASKS_PER_NODE", "2"));
        Map<String, String> fromOld = ClusterEnvironment.resolve(old);
        assertEquals("1", fromOld.get("RANK"));
        assertEquals("2", fromOld.get("WORLD_SIZE"));
        assertEquals("c7", fromOld.get("MASTER_ADDR"));
        assertEquals("10001", fromOld.get("MASTER_PORT"));
        assertEquals("2", fromOld.get("LOCAL_WORLD_SIZE"));
        old.put("SLURM_NODELIST", "d1");
        assertEquals("d1", ClusterEnvironment.resolve(old).get("MASTER_ADDR"), "SLURM_NODELIST before the job's list");
    }

    @Test
    void portsCycleThroughTenToThirtyThousand() {
        assertEquals(10000, SlurmEnvironment.portForJob(0));
        assertEquals(10001, SlurmEnvironment.portForJob(1));
        assertEquals(29999, SlurmEnvironment.portForJob(19999));
        assertEquals(10000, SlurmEnvironment.portForJob(20000));
        assertEquals(10000 + (int) (9_876_543_210L % 20000), SlurmEnvironment.portForJob(9_876_543_210L));
        assertThrows(IllegalArgumentException.class, () -> SlurmEnvironment.portForJob(-1));
    }

    @Test
    void outsideSlurmStepsNothingIsDerived() {
        Map<String, String> plain = Map.of("PATH", "/bin");
        assertSame(plain, ClusterEnvironment.resolve(plain));
        assertEquals("", ClusterEnvironment.missingHint(plain));

        // a batch script: SLURM_PROCID is 0 and SLURM_NTASKS the job's, but no other task is coming
        Map<String, String> batch = Map.of("SLURM_JOB_ID", "77", "SLURM_PROCID", "0", "SLURM_NTASKS", "2",
                "SLURM_LOCALID", "0", "SLURM_NODEID", "0", "SLURM_NODELIST", "vm", "SLURM_TASKS_PER_NODE", "2");
        assertSame(batch, ClusterEnvironment.resolve(batch));
        var e = assertThrows(IllegalStateException.class,
                () -> Distributed.createProcessGroup("gloo", "env://", -1, -1, TIMEOUT, batch));
        assertTrue(e.getMessage().contains("none of them is set"), e.getMessage());
        assertTrue(e.getMessage().endsWith(" This process runs in SLURM job 77 but not in a job step (SLURM_STEP_ID is"
                + " not set): start it with srun (e.g. srun -n 2 java -cp ... my.Main), which gives each task its"
                + " rank (SLURM_PROCID) and the world size (SLURM_NTASKS)."), e.getMessage());
    }

    @Test
    void slurmVariablesThatAreMissingAreNamed() {
        Map<String, String> task = srunTask(0, 0, 0);
        task.remove("SLURM_STEP_NODELIST");
        task.remove("SLURM_NODELIST");
        task.remove("SLURM_JOB_NODELIST");
        task.remove("SLURM_STEP_TASKS_PER_NODE");
        task.remove("SLURM_TASKS_PER_NODE");
        Map<String, String> env = ClusterEnvironment.resolve(task);
        assertFalse(env.containsKey("MASTER_ADDR"));
        assertFalse(env.containsKey("LOCAL_WORLD_SIZE"), "optional: left unset");
        assertEquals("0", env.get("RANK"));
        var e = assertThrows(IllegalStateException.class,
                () -> Distributed.createProcessGroup("gloo", "env://", -1, -1, TIMEOUT, task));
        assertTrue(e.getMessage().contains("but MASTER_ADDR is not set"), e.getMessage());
        assertTrue(e.getMessage().endsWith(" This is a SLURM job step, but: SLURM set none of SLURM_STEP_NODELIST,"
                + " SLURM_NODELIST and SLURM_JOB_NODELIST, so rank 0's host is unknown: set MASTER_ADDR."),
                e.getMessage());
    }

    @Test
    void malformedSlurmVariablesAreNamedWithTheirOverride() {
        assertEquals("SLURM_PROCID=\"x\" is not a number >= 0 (SLURM sets it for each task of a step); set RANK to"
                + " override it", resolveFails("SLURM_PROCID", "x"));
        assertEquals("SLURM_STEP_NUM_TASKS=\"0\" is not a number >= 1 (SLURM sets it for each task of a step); set"
                + " WORLD_SIZE to override it", resolveFails("SLURM_STEP_NUM_TASKS", "0"));
        assertEquals("SLURM_STEP_NODELIST=\"node[01-\" is not a SLURM host list (unclosed '[' in host list"
                + " \"node[01-\"); set MASTER_ADDR to override it", resolveFails("SLURM_STEP_NODELIST", "node[01-"));
        assertEquals("SLURM_JOB_ID=\"12a\" is not a job id (a number >= 0): set MASTER_PORT",
                resolveFails("SLURM_JOB_ID", "12a"));
        assertEquals("SLURM_STEP_TASKS_PER_NODE=\"3\" is not SLURM's tasks per node for node 1 (tasks per node \"3\""
                + " covers 1 node(s), not node 1); set LOCAL_WORLD_SIZE to override it",
                resolveFails("SLURM_STEP_TASKS_PER_NODE", "3"));

        Map<String, String> overridden = srunTask(3, 1, 0);
        overridden.put("SLURM_PROCID", "x");
        overridden.put("RANK", "3");
        assertEquals("3", ClusterEnvironment.resolve(overridden).get("RANK"), "a set RANK means SLURM_PROCID is not read");
    }

    private static String resolveFails(String name, String value) {
        Map<String, String> task = srunTask(3, 1, 0);
        task.put(name, value);
        return assertThrows(IllegalStateException.class, () -> ClusterEnvironment.resolve(task)).getMessage();
    }

    /** A port in SLURM's 10000..29999 that nothing listens on now. */
    static int freeSlurmPort() throws IOException {
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = SlurmEnvironment.PORT_BASE + ThreadLocalRandom.current().nextInt(SlurmEnvironment.PORT_SPAN);
            try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                return port;
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IOException("no free port in 10000..29999");
    }

    /** Every rank sums [rank + 1] and returns what it got. */
    private static float sumOfRanks(ProcessGroup group) {
        try (Tensor t = Tensor.of(new float[] {group.rank() + 1}, 1)) {
            group.allReduce(t, ReduceOp.SUM).await();
            return t.toFloatArray()[0];
        }
    }

    @Test
    void srunTasksJoinWithNoTorchVariables() throws Exception {
        int port = freeSlurmPort();
        List<Float> sums = Ranks.run(2, rank -> {
            Map<String, String> env = Map.of("SLURM_JOB_ID", Integer.toString(port - 10_000 + 40_000), "SLURM_STEP_ID", "0",
                    "SLURM_PROCID", Integer.toString(rank), "SLURM_NTASKS", "2", "SLURM_LOCALID", Integer.toString(rank),
                    "SLURM_NODEID", "0", "SLURM_NODELIST", "localhost", "SLURM_TASKS_PER_NODE", "2");
            try (ProcessGroup g = Distributed.createProcessGroup("gloo", "env://", -1, -1, TIMEOUT, env)) {
                assertEquals(rank, g.rank());
                assertEquals(2, g.size());
                return sumOfRanks(g);
            }
        });
        assertEquals(List.of(3f, 3f), sums);
    }

    @Test
    void pyTorchJobPodsJoinWithTheVariablesTheOperatorSets() throws Exception {
        int port = DistributedTest.freePort();
        List<Float> sums = Ranks.run(3, rank -> {
            // what Kubeflow's training operator puts in replica `rank` of a PyTorchJob (one process per pod)
            Map<String, String> env = new HashMap<>(Map.of("MASTER_ADDR", "localhost", "MASTER_PORT",
                    Integer.toString(port), "WORLD_SIZE", "3", "RANK", Integer.toString(rank), "PYTHONUNBUFFERED", "1",
                    "PET_NNODES", "3", "PET_NODE_RANK", Integer.toString(rank), "PET_NPROC_PER_NODE", "1",
                    "KUBERNETES_SERVICE_HOST", "10.96.0.1"));
            env.put("PET_MASTER_ADDR", "localhost");
            env.put("PET_MASTER_PORT", Integer.toString(port));
            assertSame(env, ClusterEnvironment.resolve(env), "nothing to derive: the torch variables are there");
            try (ProcessGroup g = Distributed.createProcessGroup("gloo", "env://", -1, -1, TIMEOUT, env)) {
                assertEquals(rank, g.rank());
                return sumOfRanks(g);
            }
        });
        assertEquals(List.of(6f, 6f, 6f), sums);
    }
}
