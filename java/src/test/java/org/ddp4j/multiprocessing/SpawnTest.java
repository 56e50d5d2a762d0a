package org.ddp4j.multiprocessing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ddp4j.testing.Cpus;
import org.ddp4j.testing.LauncherProcess;

/** Spawn.spawn / Spawn.of: worker JVMs started from code, as torch.multiprocessing.spawn. */
@Timeout(value = 180, unit = TimeUnit.SECONDS) // backstop above the bounded waits below
class SpawnTest {
    /** How long a stopped or orphaned worker may take to be gone (2 shared cores; the grace is 3 s). */
    private static final Duration GONE_WITHIN = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    @Test
    void twoWorkersAllReduceThroughEnvAndGetTheirIndexAndArguments() throws Exception {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(captured, true, StandardCharsets.UTF_8);
        Spawn.of(SpawnTestWorkers::allReduceAndRecord).nprocs(2)
                .env("MASTER_ADDR", "127.0.0.1").env("MASTER_PORT", Integer.toString(LauncherProcess.freePort()))
                .env("DDP4J_TIMEOUT_SECONDS", "60")
                .env("OMP_NUM_THREADS", "") // blank counts as unset (surefire sets 1): the workers take the default
                .args(dir.toString(), "two words", "ü-ß", "--flag=x")
                .output(out, System.err)
                .run();
        for (int i = 0; i < 2; i++) {
            String record = Files.readString(dir.resolve("worker-" + i + ".txt"), StandardCharsets.UTF_8);
            // The launcher's default: the CPUs shared by the two workers.
            assertEquals("index=" + i + " sum=3.0,30.0 local_rank=" + i + " local_world_size=2 threads="
                    + Math.max(1, Cpus.allowed() / 2) + " args=" + dir + "|two words|ü-ß|--flag=x", record);
        }
        String text = captured.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("[rank0]: worker 0 done\n"), text);
        assertTrue(text.contains("[rank1]: worker 1 done\n"), text);
    }

    @Test
    void classAndMethodNameWorkToo() throws Exception {
        Spawn.spawn(SpawnTestWorkers.class, "allReduceAndRecordWithOwnPort", 2, dir.toString(),
                Integer.toString(LauncherProcess.freePort()));
        for (int i = 0; i < 2; i++) {
            assertTrue(Files.readString(dir.resolve("worker-" + i + ".txt")).startsWith("index=" + i + " sum=3.0,30.0"));
        }
    }

    @Test
    void exitCodeThreeIsRethrownNamingRankAndCodeAndTheOtherWorkerIsStopped() throws Exception {
        long start = System.nanoTime();
        SpawnException e = assertThrows(SpawnException.class,
                () -> Spawn.of(SpawnTestWorkers::exitThreeOnIndexOne).nprocs(2).args(dir.toString()).run());
        assertEquals(1, e.rank());
        assertEquals(1, e.index());
        assertEquals(3, e.exitCode());
        assertNull(e.signalName());
        assertTrue(e.getMessage().startsWith("spawned worker rank 1 (index 1 of 2) failed with exit code 3; stopped the other"
                + " 1 worker. Last lines of its stderr:\n  worker 1: giving up on purpose"), e.getMessage());
        assertWorkerGone(0);
        assertTrue(System.nanoTime() - start < Duration.ofSeconds(60).toNanos(), "took too long to stop");
    }

    @Test
    void aWorkerKilledBySignalNineIsNamedWithTheSignal() throws Exception {
        SpawnException e = assertThrows(SpawnException.class,
                () -> Spawn.of(SpawnTestWorkers::killNineOnIndexOne).nprocs(2).rankOffset(4).args(dir.toString()).run());
        assertEquals(5, e.rank());
        assertEquals(137, e.exitCode());
        assertEquals("SIGKILL", e.signalName());
        assertTrue(e.getMessage().startsWith("spawned worker rank 5 (index 1 of 2) was killed by SIGKILL (exit code 137)"),
                e.getMessage());
        assertTrue(e.getMessage().contains("worker 1: about to kill -9 myself"), e.getMessage());
        assertWorkerGone(0);
    }

    @Test
    void anExceptionInAWorkerIsQuotedFromItsStderr() throws Exception {
        SpawnException e = assertThrows(SpawnException.class,
                () -> Spawn.of(SpawnTestWorkers::throwOnIndexOne).nprocs(2).args(dir.toString()).run());
        assertEquals(1, e.exitCode());
        assertTrue(e.getMessage().startsWith("spawned worker rank 1 (index 1 of 2) failed with exit code 1 (it threw"
                + " java.lang.IllegalStateException: bad input in worker 1); stopped the other 1 worker. Last lines of its"
                + " stderr:\n"), e.getMessage());
        assertEquals("spawned worker rank 1 (index 1) failed: java.lang.IllegalStateException: bad input in worker 1",
                e.stderrTail().get(e.stderrTail().size() - 1));
        assertWorkerGone(0);
    }

    @Test
    void joinWithATimeoutReturnsFalseWhileWorkersRunAndCloseStopsThem() throws Exception {
        SpawnContext context = Spawn.of(SpawnTestWorkers::sleepAfterRecordingPid).nprocs(2).args(dir.toString()).start();
        try (context) {
            assertEquals(2, context.nprocs());
            assertFalse(context.join(Duration.ofMillis(300)));
        }
        for (long pid : context.pids()) {
            assertTrue(awaitGone(pid), "worker pid " + pid + " still runs after close()");
        }
    }

    @Test
    void nonStaticMethodReferencesAndCapturingLambdasAreRefused() {
        SpawnTestWorkers target = new SpawnTestWorkers();
        IllegalArgumentException bound = assertThrows(IllegalArgumentException.class, () -> Spawn.of(target::instanceTrain));
        assertEquals("cannot spawn org.ddp4j.multiprocessing.SpawnTestWorkers::instanceTrain: it is an instance method, and the"
                + " object it belongs to cannot cross into a new JVM; make it static (static void instanceTrain(int index,"
                + " String[] args)) and pass what the object held as string arguments", bound.getMessage());

        String captured = "value";
        IllegalArgumentException capturing = assertThrows(IllegalArgumentException.class,
                () -> Spawn.of((i, a) -> System.out.println(captured)));
        assertTrue(capturing.getMessage().contains("it captures 1 value(s) from where it was written"), capturing.getMessage());

        IllegalArgumentException byName = assertThrows(IllegalArgumentException.class,
                () -> Spawn.spawn(SpawnTestWorkers.class, "instanceTrain", 2));
        assertEquals("cannot spawn org.ddp4j.multiprocessing.SpawnTestWorkers.instanceTrain(int, String[]): it is not static,"
                + " and a new JVM has no object to call it on; declare it static void instanceTrain(int index, String[] args)",
                byName.getMessage());

        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> Spawn.of(SpawnTestWorkers.class, "noSuchMethod"));
        assertTrue(missing.getMessage().contains("declares no method noSuchMethod(int, String[])"), missing.getMessage());

        SpawnFunction notALambda = new SpawnFunction() {
            @Override
            public void call(int index, String[] args) {}
        };
        IllegalArgumentException object = assertThrows(IllegalArgumentException.class, () -> Spawn.of(notALambda));
        assertTrue(object.getMessage().contains("spawn needs a static method reference such as MyTrainer::train"),
                object.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Spawn.of(SpawnTestWorkers::sleepAfterRecordingPid).nprocs(0));
    }

    @Test
    void workersDoNotOutliveAParentKilledWithSignalNine() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process parent = new ProcessBuilder(java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp",
                System.getProperty("java.class.path"), SpawnParentMain.class.getName(), dir.toString())
                .redirectErrorStream(true).start();
        List<Long> pids = new ArrayList<>();
        try {
            BufferedReader lines = new BufferedReader(new InputStreamReader(parent.getInputStream(), StandardCharsets.UTF_8));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (!(Files.exists(dir.resolve("pid-0")) && Files.exists(dir.resolve("pid-1")))) {
                if (System.nanoTime() > deadline || !parent.isAlive()) {
                    parent.destroyForcibly();
                    fail("the workers did not record their pids within 60 s; parent output:\n" + drain(lines));
                }
                Thread.sleep(50);
            }
            for (int i = 0; i < 2; i++) {
                pids.add(Long.parseLong(Files.readString(dir.resolve("pid-" + i)).trim()));
            }
            new ProcessBuilder("kill", "-9", Long.toString(parent.pid())).start().waitFor(10, TimeUnit.SECONDS);
            assertTrue(parent.waitFor(10, TimeUnit.SECONDS));
            for (long pid : pids) {
                assertTrue(awaitGone(pid), "worker pid " + pid + " outlived its parent by " + GONE_WITHIN);
            }
        } finally {
            parent.destroyForcibly();
            for (long pid : pids) {
                ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
    }

    private void assertWorkerGone(int index) throws Exception {
        long pid = Long.parseLong(Files.readString(dir.resolve("pid-" + index)).trim());
        assertTrue(awaitGone(pid), "worker " + index + " (pid " + pid + ") still runs");
    }

    private static boolean awaitGone(long pid) throws InterruptedException {
        long deadline = System.nanoTime() + GONE_WITHIN.toNanos();
        while (System.nanoTime() < deadline) {
            if (ProcessHandle.of(pid).map(Processes::isRunning).orElse(false) == false) {
                return true;
            }
            Thread.sleep(50);
        }
        return false;
    }

    private static String drain(BufferedReader lines) {
        StringBuilder text = new StringBuilder();
        try {
            while (lines.ready()) {
                text.append(lines.readLine()).append('\n');
            }
        } catch (Exception e) {
            text.append("<").append(e).append(">");
        }
        return text.toString();
    }
}
