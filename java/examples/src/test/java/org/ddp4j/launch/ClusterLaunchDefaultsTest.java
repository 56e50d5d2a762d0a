package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.distributed.environment.SlurmEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's defaults from the cluster: Kubeflow's PET_* variables (as torchrun reads them),
 * then a SLURM job step's variables, then the options' own; options given always win. The runs
 * start real worker JVMs ({@link LaunchTestWorker}); two launchers on threads act as two nodes.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ClusterLaunchDefaultsTest {
    private static final String WORKER = LaunchTestWorker.class.getName();

    @TempDir
    Path dir;

    private Map<String, String> workerEnv(int rank) throws IOException {
        return LauncherTest.parse(Files.readString(dir.resolve("rank-" + rank)));
    }

    /** Runs one launcher per node on threads, node n with env {@code envOf.apply(n)}; each must exit 0. */
    private List<LauncherTest.Run> nodes(int count, IntFunction<Map<String, String>> envOf, String... args)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(count);
        try {
            List<Future<LauncherTest.Run>> runs = new ArrayList<>();
            for (int n = 0; n < count; n++) {
                Map<String, String> env = envOf.apply(n);
                runs.add(pool.submit(() -> LauncherTest.launch(env, args)));
            }
            List<LauncherTest.Run> out = new ArrayList<>();
            for (int n = 0; n < count; n++) {
                LauncherTest.Run r = runs.get(n).get(90, TimeUnit.SECONDS);
                assertEquals(0, r.code(), "node " + n + ": " + r.err());
                out.add(r);
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void pyTorchJobPodsRunAsNodesFromTheirPetVariables() throws Exception {
        int port = LauncherTest.freePort();
        List<LauncherTest.Run> runs = nodes(2, pod -> {
            Map<String, String> env = LauncherTest.baseEnv();
            // what the training operator sets in pod `pod` of a PyTorchJob with nprocPerNode 1 (torchrun reads PET_*)
            env.putAll(Map.of("PET_NNODES", "2", "PET_NODE_RANK", Integer.toString(pod), "PET_NPROC_PER_NODE", "1",
                    "PET_MASTER_ADDR", "127.0.0.1", "PET_MASTER_PORT", Integer.toString(port),
                    "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(port), "WORLD_SIZE", "2",
                    "RANK", Integer.toString(pod)));
            return env;
        }, WORKER, "env", dir.toString());
        for (int rank = 0; rank < 2; rank++) {
            Map<String, String> env = workerEnv(rank);
            assertEquals(Integer.toString(rank), env.get("RANK"));
            assertEquals("2", env.get("WORLD_SIZE"));
            assertEquals(Integer.toString(rank), env.get("GROUP_RANK"), "one worker per pod: node rank = rank");
            assertEquals("1", env.get("LOCAL_WORLD_SIZE"));
            assertEquals(Integer.toString(port), env.get("MASTER_PORT"));
            String notice = "ddp4j-run: from the environment: --nproc-per-node 1 (PET_NPROC_PER_NODE), --nnodes 2"
                    + " (PET_NNODES), --node-rank " + rank + " (PET_NODE_RANK), --master-addr 127.0.0.1 (PET_MASTER_ADDR),"
                    + " --master-port " + port + " (PET_MASTER_PORT)";
            assertTrue(runs.get(rank).err().lines().anyMatch(notice::equals), runs.get(rank).err());
        }
    }

    @Test
    void srunOneLauncherPerNodeTakesNodesRankAndMasterFromSlurm() throws Exception {
        int slurmPort = freeSlurmPort();
        long jobId = 40_000 + slurmPort - SlurmEnvironment.PORT_BASE; // a job id whose port is free now
        List<LauncherTest.Run> runs = nodes(2, node -> {
            Map<String, String> env = LauncherTest.baseEnv();
            // srun -N 2 --ntasks-per-node=1: task `node` on node `node`
            env.putAll(Map.of("SLURM_JOB_ID", Long.toString(jobId), "SLURM_STEP_ID", "0", "SLURM_PROCID",
                    Integer.toString(node), "SLURM_NTASKS", "2", "SLURM_NNODES", "2", "SLURM_NODEID", Integer.toString(node),
                    "SLURM_LOCALID", "0", "SLURM_NODELIST", "localhost,localhost", "SLURM_TASKS_PER_NODE", "1(x2)"));
            return env;
        }, "--nproc-per-node", "2", WORKER, "env", dir.toString());
        for (int rank = 0; rank < 4; rank++) {
            Map<String, String> env = workerEnv(rank);
            assertEquals("4", env.get("WORLD_SIZE"));
            assertEquals(Integer.toString(rank / 2), env.get("GROUP_RANK"));
            assertEquals(Integer.toString(rank % 2), env.get("LOCAL_RANK"));
            assertEquals("localhost", env.get("MASTER_ADDR"));
            assertEquals(Integer.toString(slurmPort), env.get("MASTER_PORT"), "10000 + job id % 20000");
        }
        String notice = "ddp4j-run: from the environment: --nnodes 2 (SLURM job " + jobId + "), --node-rank 1 (SLURM job "
                + jobId + "), --master-addr localhost (SLURM job " + jobId + "), --master-port " + slurmPort
                + " (SLURM job " + jobId + ")";
        assertTrue(runs.get(1).err().lines().anyMatch(notice::equals), runs.get(1).err());
    }

    /** A port in SLURM's 10000..29999 that nothing listens on now (ephemeral ports lie above it). */
    private static int freeSlurmPort() throws IOException {
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

    /** Runs the launcher with no worker: it prints what it took from the environment, then fails on usage. */
    private static LauncherTest.Run noWorker(Map<String, String> vars, String... args) {
        Map<String, String> env = new HashMap<>(LauncherTest.baseEnv());
        env.keySet().removeIf(k -> k.startsWith("SLURM_") || k.startsWith("PET_"));
        env.putAll(vars);
        LauncherTest.Run r = LauncherTest.launch(env, args);
        assertEquals(2, r.code(), r.err());
        return r;
    }

    @Test
    void optionsGivenWinOverTheEnvironment() {
        LauncherTest.Run r = noWorker(Map.of("PET_NPROC_PER_NODE", "3", "PET_NNODES", "x", "PET_MASTER_PORT", "7"),
                "--nproc-per-node", "1", "--nnodes", "1");
        assertTrue(r.err().contains("ddp4j-run: from the environment: --master-port 7 (PET_MASTER_PORT)\n"), r.err());
        assertTrue(r.err().contains("missing MAIN_CLASS_OR_COMMAND"), r.err());
        assertFalse(r.err().contains("PET_NNODES"), "a variable whose option is given is not read: " + r.err());
    }

    @Test
    void torchrunsPetForms() {
        LauncherTest.Run fixed = noWorker(Map.of("PET_NNODES", "2:2", "PET_NODE_RANK", "1", "PET_MAX_RESTARTS", "3"));
        assertTrue(fixed.err().contains("--nnodes 2 (PET_NNODES), --node-rank 1 (PET_NODE_RANK), --max-restarts 3"
                + " (PET_MAX_RESTARTS)"), fixed.err());

        int cores = Runtime.getRuntime().availableProcessors();
        assertTrue(noWorker(Map.of("PET_NPROC_PER_NODE", "cpu")).err()
                .contains("--nproc-per-node " + cores + " (PET_NPROC_PER_NODE)"));
        int auto = Cuda.isAvailable() ? Cuda.deviceCount() : cores;
        assertTrue(noWorker(Map.of("PET_NPROC_PER_NODE", "auto")).err()
                .contains("--nproc-per-node " + auto + " (PET_NPROC_PER_NODE)"));
        LauncherTest.Run gpu = noWorker(Map.of("PET_NPROC_PER_NODE", "gpu"));
        if (Cuda.isAvailable()) {
            assertTrue(gpu.err().contains("--nproc-per-node " + Cuda.deviceCount() + " (PET_NPROC_PER_NODE)"), gpu.err());
        } else {
            assertTrue(gpu.err().contains("ddp4j-run: PET_NPROC_PER_NODE=\"gpu\" asks for one worker per GPU, but no GPU"
                    + " is usable ("), gpu.err());
        }
    }

    @Test
    void malformedPetVariablesAreUsageErrorsNamingThem() {
        assertTrue(noWorker(Map.of("PET_NNODES", "x")).err().contains(
                "ddp4j-run: PET_NNODES=\"x\" is not a number >= 1; pass --nnodes to override it\n"));
        assertTrue(noWorker(Map.of("PET_NNODES", "1:4")).err().contains(
                "ddp4j-run: PET_NNODES=\"1:4\" is an elastic range, which ddp4j's launcher does not support: give a"
                        + " fixed number of nodes (N or N:N); pass --nnodes to override it\n"));
        assertTrue(noWorker(Map.of("PET_MASTER_PORT", "70000")).err().contains(
                "ddp4j-run: PET_MASTER_PORT=\"70000\" is not a port number (1..65535); pass --master-port to override it"));
        assertTrue(noWorker(Map.of("PET_NODE_RANK", "-1")).err().contains(
                "ddp4j-run: PET_NODE_RANK=\"-1\" is not a number >= 0; pass --node-rank to override it"));
        assertTrue(noWorker(Map.of("PET_NPROC_PER_NODE", "0")).err().contains(
                "ddp4j-run: PET_NPROC_PER_NODE=\"0\" is not a number >= 1; pass --nproc-per-node to override it"));
        // the launcher's own range checks still apply to values from the environment
        assertTrue(noWorker(Map.of("PET_NNODES", "2", "PET_NODE_RANK", "2")).err().contains(
                "--node-rank 2 is out of range for --nnodes 2"));
    }

    private static Map<String, String> srunTasks(int tasks, int nodes) {
        return Map.of("SLURM_JOB_ID", "42", "SLURM_STEP_ID", "0", "SLURM_PROCID", "0", "SLURM_NTASKS",
                Integer.toString(tasks), "SLURM_NNODES", Integer.toString(nodes), "SLURM_NODEID", "0", "SLURM_LOCALID", "0",
                "SLURM_NODELIST", "vm", "SLURM_TASKS_PER_NODE", Integer.toString(tasks));
    }

    @Test
    void srunWithSeveralLaunchersOnANodeIsRefused() {
        LauncherTest.Run twoOnOne = noWorker(srunTasks(2, 1));
        assertTrue(twoOnOne.err().contains("ddp4j-run: srun started 2 launchers on 1 node(s), but the launcher runs"
                + " once per node and starts --nproc-per-node workers itself: use srun --ntasks-per-node=1 (or srun -n 2"
                + " java ... MainClass without the launcher: each task is then one rank) (this launcher runs in a SLURM"
                + " job step; pass --node-rank to choose it yourself)\n"), twoOnOne.err());

        LauncherTest.Run chosen = noWorker(srunTasks(2, 1), "--node-rank", "0");
        assertFalse(chosen.err().contains("srun started"), chosen.err());
        assertTrue(chosen.err().contains("from the environment: --nnodes 1 (SLURM job 42), --master-addr vm (SLURM job"
                + " 42), --master-port 10042 (SLURM job 42)"), chosen.err());

        Map<String, String> port = new HashMap<>(srunTasks(1, 1));
        port.put("MASTER_PORT", "23456");
        assertTrue(noWorker(port).err().contains("--master-port 23456 (SLURM job 42)"),
                "MASTER_PORT beats the job id's port, as for env://");
    }

    @Test
    void aBatchScriptIsNotAStepAndOutsideClustersNothingIsPrinted() {
        Map<String, String> batch = new HashMap<>(srunTasks(2, 1));
        batch.remove("SLURM_STEP_ID");
        assertFalse(noWorker(batch).err().contains("from the environment"));
        assertFalse(noWorker(Map.of()).err().contains("from the environment"));
    }
}
