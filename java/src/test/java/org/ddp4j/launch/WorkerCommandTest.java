package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class WorkerCommandTest {

    @Test
    void classNamesOnTheClassPathAreJavaWorkers() {
        assertTrue(WorkerCommand.isJavaClass(LaunchTestWorker.class.getName()));
        assertTrue(WorkerCommand.isJavaClass("org.ddp4j.launch.Launcher"));
        assertFalse(WorkerCommand.isJavaClass("org.ddp4j.examples.NoSuchDemo"), "not loadable");
        assertFalse(WorkerCommand.isJavaClass("train.py"), "not loadable");
        assertFalse(WorkerCommand.isJavaClass("python3"), "no dot");
        assertFalse(WorkerCommand.isJavaClass("./org.ddp4j.launch.Launcher"), "a path");
        assertFalse(WorkerCommand.isJavaClass("bin/org.ddp4j.launch.Launcher"), "a path");
    }

    @Test
    void javaWorkersRunWithThisJvmAndClassPath() {
        List<String> argv = WorkerCommand.argv(List.of(LaunchTestWorker.class.getName(), "env", "/tmp"),
                Map.of(WorkerCommand.JAVA_OPTS_ENV, "-Xmx1g  -Dx=\"a b\""));
        assertEquals(WorkerCommand.javaExecutable(), argv.get(0));
        assertTrue(argv.get(0).endsWith("java"), argv.get(0));
        assertEquals("-cp", argv.get(1));
        assertEquals(System.getProperty("java.class.path"), argv.get(2));
        assertEquals(List.of(WorkerCommand.LEFTOVER_AGE_FLAG, WorkerCommand.DEFAULT_GC_FLAG,
                WorkerCommand.DEFAULT_JIT_FLAG, "-Xmx1g", "-Dx=a b", WorkerMain.class.getName(), LaunchTestWorker.class.getName(), "env", "/tmp"),
                argv.subList(3, argv.size()));
    }

    @Test
    void workersRunC1OnlyUnlessTheOptionsChooseTheJit() {
        assertEquals(List.of("-XX:TieredStopAtLevel=1"), WorkerCommand.jitDefaults(List.of("-Xmx1g")));
        for (String chosen : List.of("-XX:TieredStopAtLevel=4", "-XX:+TieredCompilation", "-XX:-TieredCompilation",
                "-Xint", "-Xcomp")) {
            assertEquals(List.of(), WorkerCommand.jitDefaults(List.of(chosen)), chosen);
        }
    }

    @Test
    void workersGetAGcAndAHeapShareUnlessTheOptionsChooseThem() {
        assertEquals(List.of("-XX:+UseSerialGC", "-XX:MaxRAMPercentage=25.0"), WorkerCommand.memoryDefaults(List.of(), 1));
        assertEquals(List.of("-XX:+UseSerialGC", "-XX:MaxRAMPercentage=12.5"), WorkerCommand.memoryDefaults(List.of(), 4));
        assertEquals(List.of("-XX:MaxRAMPercentage=25.0"), WorkerCommand.memoryDefaults(List.of("-XX:+UseG1GC"), 2));
        assertEquals(List.of("-XX:+UseSerialGC"), WorkerCommand.memoryDefaults(List.of("-Xmx512m"), 2));
        assertEquals(List.of(), WorkerCommand.memoryDefaults(List.of("-XX:+UseParallelGC", "-XX:MaxRAMPercentage=60"), 8));
        List<String> argv = WorkerCommand.argv(List.of(LaunchTestWorker.class.getName()), Map.of(), 2);
        assertEquals(List.of(WorkerCommand.LEFTOVER_AGE_FLAG, "-XX:+UseSerialGC", "-XX:MaxRAMPercentage=25.0",
                "-XX:TieredStopAtLevel=1", WorkerMain.class.getName(), LaunchTestWorker.class.getName()), argv.subList(3, argv.size()));
    }

    @Test
    void commandsRunThroughTheLifelineScript() {
        List<String> cmd = List.of("sh", "train.sh", "--epochs", "3");
        List<String> argv = WorkerCommand.argv(cmd, Map.of(WorkerCommand.JAVA_OPTS_ENV, "-Xmx1g", "PATH", "/usr/bin:/bin"));
        assertEquals(cmd, argv.subList(argv.size() - cmd.size(), argv.size()), "the command, unchanged, comes last");
        int bash = argv.indexOf(WorkerCommand.BASH);
        assertEquals(List.of(WorkerCommand.BASH, "-c", WorkerCommand.LIFELINE_SCRIPT, "ddp4j-worker"),
                argv.subList(bash, bash + 4));
        assertEquals(cmd.size() + 4 + bash, argv.size());
    }

    @Test
    void commandsThatCannotBeFoundRunAsGivenSoTheStartFailureNamesThem() {
        List<String> cmd = List.of("/nonexistent/train.sh", "--epochs", "3");
        assertEquals(cmd, WorkerCommand.argv(cmd, Map.of()));
        List<String> onPath = List.of("ddp4j-no-such-program");
        assertEquals(onPath, WorkerCommand.argv(onPath, Map.of("PATH", "/usr/bin:/bin")));
    }

    @Test
    void javaOptionsSplitLikeAShell() {
        assertEquals(List.of(), WorkerCommand.splitOptions("   "));
        assertEquals(List.of("-Xmx4g", "-Da=b c", "-Dd=it's", "-De=x y"),
                WorkerCommand.splitOptions(" -Xmx4g '-Da=b c'\t\"-Dd=it's\" -De=x\\ y "));
        assertEquals(List.of(""), WorkerCommand.splitOptions("''"));
    }
}
