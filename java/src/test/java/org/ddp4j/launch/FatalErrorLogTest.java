package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.multiprocessing.WorkerJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker JVM that crashes (a SIGSEGV through Unsafe) leaves its hs_err log in DDP4J_DEBUG_DIR,
 * where the launcher's -XX:ErrorFile puts it, and {@link FatalErrorLog#find} finds it by pid; and
 * find's other places and refusals, with files written by hand.
 */
class FatalErrorLogTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aCrashedWorkerJvmLeavesItsLogInTheDebugFolderWhereFindLooks() throws Exception {
        Path work = Files.createDirectories(dir.resolve("work"));
        Path debug = Files.createDirectories(dir.resolve("debug"));
        List<String> argv = WorkerCommand.argv(List.of(CrashingWorker.class.getName()),
                Map.of("DDP4J_DEBUG_DIR", debug.toString(), WorkerJvm.JAVA_OPTS_ENV, "-Xmx64m"));
        // No core file: with core dumps on (HotSpot's default) the JVM still aborts with SIGABRT, as
        // workers do; -XX:-CreateCoredumpOnCrash would make it exit 1 instead.
        List<String> noCore = new ArrayList<>(List.of("/bin/bash", "-c", "ulimit -c 0 && exec \"$@\"", "crash"));
        noCore.addAll(argv);
        long start = System.currentTimeMillis();
        Process p = new ProcessBuilder(noCore).directory(work.toFile()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("out.txt").toFile()).start();
        assertTrue(p.waitFor(50, TimeUnit.SECONDS), "the crashing worker did not exit");
        String out = Files.readString(dir.resolve("out.txt"));
        assertEquals(134, p.exitValue(), out); // SIGABRT, after the log
        Path expected = debug.resolve("hs_err_pid" + p.pid() + ".log");
        assertEquals(expected, FatalErrorLog.find(p.pid(), work, FatalErrorLog.errorFile(argv), start), out);
        String log = Files.readString(expected);
        assertTrue(log.contains("SIGSEGV") && log.contains("pid=" + p.pid()), log.substring(0, Math.min(2000, log.length())));
        assertFalse(Files.exists(work.resolve("hs_err_pid" + p.pid() + ".log")), "the log went to the working directory");
    }

    @Test
    void theWorkersErrorFileIsTheDebugFolderUnlessTheirOptionsSetOne() {
        List<String> argv = WorkerCommand.argv(List.of(LaunchTestWorker.class.getName()), Map.of("DDP4J_DEBUG_DIR", "/data/run 50%"));
        assertEquals("/data/run 50%%/hs_err_pid%p.log", FatalErrorLog.errorFile(argv));
        assertEquals(Path.of("/data/run 50%/hs_err_pid42.log"), FatalErrorLog.expand(FatalErrorLog.errorFile(argv), 42, dir));
        List<String> own = WorkerCommand.argv(List.of(LaunchTestWorker.class.getName()),
                Map.of(WorkerJvm.JAVA_OPTS_ENV, "-XX:ErrorFile=crash-%p.txt"));
        assertEquals(1, own.stream().filter(a -> a.startsWith("-XX:ErrorFile=")).count(), own.toString());
        assertEquals("crash-%p.txt", FatalErrorLog.errorFile(own));
        assertEquals(dir.resolve("crash-7.txt"), FatalErrorLog.expand("crash-%p.txt", 7, dir));
    }

    @Test
    void findsTheLogInTheWorkingDirectoryWhenTheErrorFileIsNotThere() throws Exception {
        Path log = Files.writeString(dir.resolve("hs_err_pid999999001.log"), "# A fatal error has been detected");
        assertEquals(log, FatalErrorLog.find(999999001, dir, "/nonexistent/hs_err_pid%p.log", 0));
        assertEquals(log, FatalErrorLog.find(999999001, dir, null, 0));
    }

    @Test
    void ignoresAnotherPidsLogAndOneOlderThanTheWorker() throws Exception {
        Path log = Files.writeString(dir.resolve("hs_err_pid999999001.log"), "# A fatal error has been detected");
        assertNull(FatalErrorLog.find(999999002, dir, null, 0));
        long now = System.currentTimeMillis();
        Files.setLastModifiedTime(log, FileTime.fromMillis(now - 60_000));
        assertNull(FatalErrorLog.find(999999001, dir, null, now - 1_000)); // left by an earlier process with that pid
        assertEquals(log, FatalErrorLog.find(999999001, dir, null, now - 120_000));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FatalErrorLog.find(0, dir, null, 0));
        assertEquals("pid must be positive, got 0", e.getMessage());
    }
}
