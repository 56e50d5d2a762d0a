package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.ddp4j.distributed.environment.SlurmEnvironment;
import org.ddp4j.testing.RepoFiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ddp4j.multiprocessing.WorkerJvm;

/**
 * ddp4j under a real SLURM: a one-node cluster of Debian's slurmctld, slurmd and munge, started
 * by {@code scripts/slurm-local.sh} before the tests and stopped after them whatever happens (a
 * watchdog stops it too if this JVM dies). Skipped, with the reason, when not root or when the
 * packages cannot be installed. Every srun has {@code --time} and a bound here as well.
 */
@Timeout(value = 900, unit = TimeUnit.SECONDS) // backstop: starting may install the packages first
class RealSlurmTest {
    private static final Pattern SUMMARY = Pattern.compile("summary rank=(\\d+) world=(\\d+) steps=(\\d+) ");
    /** Small, quick JVMs: the machine may have 2 cores for everything. */
    private static final List<String> JVM = List.of("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");
    private static final long SRUN_LIMIT_SECONDS = 240;

    private static Path tmp;
    private static Path cluster;
    private static Path script;
    private static String node;

    @BeforeAll
    static void startCluster() throws Exception {
        script = RepoFiles.path("scripts/slurm-local.sh").toAbsolutePath();
        assertTrue(Files.isExecutable(script), script + " is missing");
        String uid = command(List.of("id", "-u"), 10).text().trim();
        assumeTrue(uid.equals("0"), "real-SLURM test skipped: slurmd must run as root, and this test runs as uid " + uid);
        node = command(List.of("hostname", "-s"), 10).text().trim();
        // munged runs as user munge and must be able to enter the cluster's folder
        tmp = Files.createTempDirectory("ddp4j-slurm", PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwxr-xr-x")));
        cluster = tmp.resolve("cluster");
        Result start = command(List.of(script.toString(), "start", cluster.toString(), "--owner",
                Long.toString(ProcessHandle.current().pid())), 780);
        if (start.code() == 3) {
            stopCluster();
            assumeTrue(false, "real-SLURM test skipped: " + start.text().trim());
        }
        if (start.code() != 0) {
            stopCluster();
            fail("slurm-local.sh start failed (exit " + start.code() + "):\n" + start.text());
        }
    }

    @AfterAll
    static void stopCluster() throws Exception {
        if (cluster != null) {
            Result stop = command(List.of(script.toString(), "stop", cluster.toString()), 120);
            assertEquals(0, stop.code(), "slurm-local.sh stop:\n" + stop.text());
            assertTrue(Files.notExists(cluster), "stop removes the cluster's folder");
            cluster = null;
        }
        if (tmp != null) {
            try (Stream<Path> files = Files.walk(tmp)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                    Files.deleteIfExists(p);
                }
            }
            tmp = null;
        }
    }

    /** What a command printed (stdout and stderr merged) and how it exited. */
    record Result(int code, String text) {
        List<String> lines() {
            return text.lines().collect(Collectors.toList());
        }
    }

    /** Runs a command with SLURM_CONF set and no torch variables, for at most {@code seconds}. */
    private static Result command(List<String> argv, long seconds) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(argv).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        for (String torch : List.of("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")) {
            env.remove(torch);
        }
        env.keySet().removeIf(k -> k.startsWith("SLURM_") || k.startsWith("PET_"));
        if (cluster != null) {
            env.put("SLURM_CONF", cluster.resolve("slurm.conf").toString());
        }
        env.put(WorkerJvm.JAVA_OPTS_ENV, String.join(" ", JVM));
        Process p = pb.start();
        p.getOutputStream().close();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "<output lost: " + e + ">";
            }
        });
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            fail(argv.get(0) + " did not finish within " + seconds + " s:\n" + out.get(10, TimeUnit.SECONDS));
        }
        Result r = new Result(p.exitValue(), out.get(30, TimeUnit.SECONDS));
        System.out.println("--- " + String.join(" ", argv) + " exited " + r.code() + ":\n" + r.text());
        return r;
    }

    /** srun with time limits of its own (to get the CPUs, to run), running {@code java -cp <test class path> mainClass args}. */
    private static Result srun(List<String> srunOptions, String mainClass, String... args) throws Exception {
        List<String> argv = new ArrayList<>(List.of("srun", "--time=4", "--immediate=60", "--kill-on-bad-exit=1", "--label"));
        argv.addAll(srunOptions);
        argv.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        argv.addAll(JVM);
        argv.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass));
        argv.addAll(List.of(args));
        return command(argv, SRUN_LIMIT_SECONDS);
    }

    /** The text task {@code label} (srun --label) printed from "parameters after training:" to its summary. */
    private static String trained(List<String> lines, String prefix) {
        StringBuilder text = new StringBuilder();
        boolean inside = false;
        for (String line : lines) {
            if (line.startsWith(prefix)) {
                String body = line.substring(prefix.length());
                inside = (inside || body.startsWith("parameters after training:")) && !body.startsWith("summary");
                if (inside) {
                    text.append(body).append('\n');
                }
            }
        }
        return text.toString();
    }

    @Test
    void srunStartsTwoRanksWithNoWrapper() throws Exception {
        Result r = srun(List.of("-n", "2"), "org.ddp4j.examples.LinearDemo", "--epochs", "200", "--device", "cpu");
        assertEquals(0, r.code(), r.text());
        for (int rank = 0; rank < 2; rank++) {
            String prefix = rank + ": ";
            Matcher m = r.lines().stream().filter(l -> l.startsWith(prefix)).map(l -> SUMMARY.matcher(l))
                    .filter(Matcher::find).findFirst().orElseThrow(() -> new AssertionError("no summary:\n" + r.text()));
            assertEquals(Integer.toString(rank), m.group(1));
            assertEquals("2", m.group(2), "WORLD_SIZE from SLURM_NTASKS");
            assertEquals("400", m.group(3), "200 epochs of 2 samples per rank");
        }
        // rank 0 prints where the store is: the node list's first host and 10000 + job id % 20000
        Matcher master = r.lines().stream().map(Pattern.compile("^0: MASTER_ADDR=(\\S+) MASTER_PORT=(\\d+)$")::matcher)
                .filter(Matcher::find).findFirst().orElseThrow(() -> new AssertionError(r.text()));
        assertEquals(node, master.group(1));
        int port = Integer.parseInt(master.group(2));
        assertTrue(port >= SlurmEnvironment.PORT_BASE && port < SlurmEnvironment.PORT_BASE + SlurmEnvironment.PORT_SPAN,
                "port " + port);
        assertEquals(trained(r.lines(), "0: "), trained(r.lines(), "1: "), "DDP keeps the replicas equal");
        assertTrue(trained(r.lines(), "0: ").contains("module.weight=tensor([["), r.text());
    }

    @Test
    void srunStartsOneLauncherPerNode() throws Exception {
        Result r = srun(List.of("-N", "1", "--ntasks-per-node=1"), Launcher.class.getName(), "--nproc-per-node", "2",
                "org.ddp4j.examples.LinearDemo", "--epochs", "50", "--device", "cpu");
        assertEquals(0, r.code(), r.text());
        for (int rank = 0; rank < 2; rank++) {
            String prefix = "0: [rank" + rank + "]: ";
            assertTrue(r.lines().stream().anyMatch(l -> l.startsWith(prefix + "summary rank=") && SUMMARY.matcher(l).find()
                    && l.contains(" world=2 steps=100 ")), r.text());
        }
        Matcher notice = r.lines().stream().map(Pattern.compile("^0: ddp4j-run: from the environment: --nnodes 1 \\(SLURM"
                + " job (\\d+)\\), --node-rank 0 \\(SLURM job \\1\\), --master-addr (\\S+) \\(SLURM job \\1\\),"
                + " --master-port (\\d+) \\(SLURM job \\1\\)$")::matcher).filter(Matcher::find).findFirst()
                .orElseThrow(() -> new AssertionError("no notice of the SLURM defaults:\n" + r.text()));
        assertEquals(node, notice.group(2));
        assertEquals(SlurmEnvironment.portForJob(Long.parseLong(notice.group(1))), Integer.parseInt(notice.group(3)));
        assertEquals(trained(r.lines(), "0: [rank0]: "), trained(r.lines(), "0: [rank1]: "));
    }

    @Test
    void srunOfTwoLaunchersOnOneNodeSaysHowToStartThem() throws Exception {
        Result r = srun(List.of("-n", "2"), Launcher.class.getName(), "--nproc-per-node", "2",
                "org.ddp4j.examples.LinearDemo");
        assertTrue(r.code() != 0, r.text());
        assertTrue(r.text().contains("Exited with exit code 2"), "a usage error: " + r.text());
        assertTrue(r.text().contains(": ddp4j-run: srun started 2 launchers on 1 node(s), but the launcher runs once per"
                + " node and starts --nproc-per-node workers itself: use srun --ntasks-per-node=1"), r.text());
    }
}
