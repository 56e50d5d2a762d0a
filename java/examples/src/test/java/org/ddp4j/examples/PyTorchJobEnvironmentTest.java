package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two processes of the linear demo started as Kubeflow's PyTorchJob starts its pods' containers:
 * no launcher, no SLURM, only the variables the training operator sets (MASTER_ADDR, MASTER_PORT,
 * WORLD_SIZE, RANK, and the PET_* ones torchrun would read). env:// must use them as set.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class PyTorchJobEnvironmentTest {

    @Test
    void twoPodsTrainFromTheOperatorsVariables() throws Exception {
        int port = LauncherProcess.freePort();
        List<Process> pods = new ArrayList<>();
        List<CompletableFuture<String>> outputs = new ArrayList<>();
        try {
            for (int rank = 0; rank < 2; rank++) {
                ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
                        System.getProperty("java.class.path"), LinearDemo.class.getName(), "--epochs", "20",
                        "--device", "cpu").redirectErrorStream(true);
                Map<String, String> env = pb.environment();
                env.keySet().removeIf(k -> k.startsWith("SLURM_") || k.startsWith("PET_") || k.equals("LOCAL_RANK")
                        || k.equals("LOCAL_WORLD_SIZE"));
                // replica `rank` of a PyTorchJob with 2 replicas (master + 1 worker), one process per pod
                env.put("MASTER_ADDR", "localhost"); // the master pod's service name on Kubernetes
                env.put("MASTER_PORT", Integer.toString(port));
                env.put("WORLD_SIZE", "2");
                env.put("RANK", Integer.toString(rank));
                env.put("PET_NNODES", "2");
                env.put("PET_NODE_RANK", Integer.toString(rank));
                env.put("PET_NPROC_PER_NODE", "1");
                env.put("PET_MASTER_ADDR", "localhost");
                env.put("PET_MASTER_PORT", Integer.toString(port));
                env.put("PYTHONUNBUFFERED", "1");
                Process p = pb.start();
                p.getOutputStream().close();
                pods.add(p);
                outputs.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    } catch (IOException e) {
                        return "<output lost: " + e + ">";
                    }
                }));
            }
            for (int rank = 0; rank < 2; rank++) {
                assertTrue(pods.get(rank).waitFor(240, TimeUnit.SECONDS), "pod " + rank + " did not finish in 240 s");
                String out = outputs.get(rank).get(30, TimeUnit.SECONDS);
                System.out.println("--- pod " + rank + ":\n" + out);
                assertEquals(0, pods.get(rank).exitValue(), out);
                assertTrue(out.contains("| distributed init (rank " + rank + "): tcp://localhost:" + port + ", cpu"), out);
                String summary = "summary rank=" + rank + " world=2 steps=40 ";
                assertTrue(out.lines().anyMatch(l -> l.startsWith(summary)), out);
            }
            assertEquals(trained(outputs.get(0).get()), trained(outputs.get(1).get()), "DDP keeps the replicas equal");
        } finally {
            pods.forEach(LauncherProcess::kill);
        }
    }

    private static String trained(String out) {
        int from = out.indexOf("parameters after training:");
        int to = out.indexOf("summary rank=", from);
        assertTrue(from >= 0 && to > from, out);
        return out.substring(from, to);
    }
}
