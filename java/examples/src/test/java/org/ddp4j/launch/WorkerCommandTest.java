package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ddp4j.multiprocessing.WorkerJvm;

class WorkerCommandTest {

    @Test
    void classNamesOnTheClassPathAreJavaWorkers() {
        assertTrue(WorkerCommand.isJavaClass(LaunchTestWorker.class.getName()));
        assertTrue(WorkerCommand.isJavaClass("org.ddp4j.launch.Launcher"));
        assertFalse(WorkerCommand.isJavaClass("org.ddp4j.examples.NoSuchDemo"), "not loadable");
        assertFalse(WorkerCommand.isJavaClass("train.py"), "not loadable");
        assertFalse(WorkerCommand.isJavaClass("python3"), "not loadable");
        assertTrue(WorkerCommand.isJavaClass("DefaultPackageWorker"), "a class in the default package");
        assertFalse(WorkerCommand.isJavaClass("my-script"), "not a class name");
        assertFalse(WorkerCommand.isJavaClass("org..Main"), "not a class name");
        assertFalse(WorkerCommand.isJavaClass("./org.ddp4j.launch.Launcher"), "a path");
        assertFalse(WorkerCommand.isJavaClass("bin/org.ddp4j.launch.Launcher"), "a path");
    }

    @Test
    void javaWorkersRunWithThisJvmAndClassPath() {
        List<String> argv = WorkerCommand.argv(List.of(LaunchTestWorker.class.getName(), "env", "/tmp"),
                Map.of(WorkerJvm.JAVA_OPTS_ENV, "-Xmx1g  -Dx=\"a b\""));
        assertEquals(WorkerJvm.javaExecutable(), argv.get(0));
        assertTrue(argv.get(0).endsWith("java"), argv.get(0));
        assertEquals("-cp", argv.get(1));
        assertEquals(System.getProperty("java.class.path"), argv.get(2));
        assertEquals(List.of(WorkerJvm.LEFTOVER_AGE_FLAG, crashLogHere(), WorkerJvm.DEFAULT_GC_FLAG,
                WorkerJvm.DEFAULT_JIT_FLAG, "-Xmx1g", "-Dx=a b", WorkerMain.class.getName(), LaunchTestWorker.class.getName(), "env", "/tmp"),
                argv.subList(3, argv.size()));
    }

    /** The workers' -XX:ErrorFile when DDP4J_DEBUG_DIR is unset: the working directory. */
    private static String crashLogHere() {
        return "-XX:ErrorFile=" + Path.of("").toAbsolutePath() + "/hs_err_pid%p.log";
    }

    @Test
    void workersRunC1OnlyUnlessTheOptionsChooseTheJit() {
        assertEquals(List.of("-XX:TieredStopAtLevel=1"), WorkerJvm.jitDefaults(List.of("-Xmx1g")));
        for (String chosen : List.of("-XX:TieredStopAtLevel=4", "-XX:+TieredCompilation", "-XX:-TieredCompilation",
                "-Xint", "-Xcomp")) {
            assertEquals(List.of(), WorkerJvm.jitDefaults(List.of(chosen)), chosen);
        }
    }

    @Test
    void workersGetAGcAndAHeapShareUnlessTheOptionsChooseThem() {
        assertEquals(List.of("-XX:+UseSerialGC", "-XX:MaxRAMPercentage=25.0"), WorkerJvm.memoryDefaults(List.of(), 1));
        assertEquals(List.of("-XX:+UseSerialGC", "-XX:MaxRAMPercentage=12.5"), WorkerJvm.memoryDefaults(List.of(), 4));
        assertEquals(List.of("-XX:MaxRAMPercentage=25.0"), WorkerJvm.memoryDefaults(List.of("-XX:+UseG1GC"), 2));
        assertEquals(List.of("-XX:+UseSerialGC"), WorkerJvm.memoryDefaults(List.of("-Xmx512m"), 2));
        assertEquals(List.of(), WorkerJvm.memoryDefaults(List.of("-XX:+UseParallelGC", "-XX:MaxRAMPercentage=60"), 8));
        List<String> argv = WorkerCommand.argv(List.of(LaunchTestWorker.class.getName()), Map.of(), 2);
        assertEquals(List.of(WorkerJvm.LEFTOVER_AGE_FLAG, crashLogHere(), "-XX:+UseSerialGC", "-XX:MaxRAMPercentage=25.0",
                "-XX:TieredStopAtLevel=1", WorkerMain.class.getName(), LaunchTestWorker.class.getName()), argv.subList(3, argv.size()));
    }

    @Test
    void commandsRunThroughTheLifelineScript() {
        List<String> cmd = List.of("sh", "train.sh", "--epochs", "3");
        List<String> argv = WorkerCommand.argv(cmd, Map.of(WorkerJvm.JAVA_OPTS_ENV, "-Xmx1g", "PATH", "/usr/bin:/bin"));
        assertEquals(cmd, argv.subList(argv.size() - cmd.size(), argv.size()), "the command, unchanged, comes last");
        int bash = argv.indexOf(WorkerCommand.BASH);
        assertEquals(List.of(WorkerCommand.BASH, "-c", WorkerCommand.LIFELINE_SCRIPT, "ddp4j-worker"),
                argv.subList(bash, bash + 4));
        assertEquals(cmd.size() + 4 + bash, argv.size());
    }

    @Test
    void aDefaultPackageMainClassIsAJavaWorkerNotACommand() {
        List<String> argv = WorkerCommand.argv(List.of("DefaultPackageWorker", "a"), Map.of("PATH", "/usr/bin:/bin"));
        assertEquals(List.of(WorkerMain.class.getName(), "DefaultPackageWorker", "a"), argv.subList(argv.size() - 3, argv.size()));
        assertEquals("-cp", argv.get(1));
    }

    @Test
    void namesThatAreNeitherAClassNorAnExecutableAreRefusedNamingBoth() {
        var missing = assertThrows(WorkerCommand.UnknownWorkerException.class,
                () -> WorkerCommand.argv(List.of("/nonexistent/train.sh", "--epochs", "3"), Map.of()));
        assertTrue(missing.getMessage().startsWith("cannot start the workers: '/nonexistent/train.sh' is neither a class on"
                + " the launcher's class path"), missing.getMessage());
        assertTrue(missing.getMessage().contains("As a command, /nonexistent/train.sh does not exist or is not executable"),
                missing.getMessage());

        var typo = assertThrows(WorkerCommand.UnknownWorkerException.class,
                () -> WorkerCommand.argv(List.of("my.NoSuchMain"), Map.of("PATH", "/usr/bin:/bin")));
        assertTrue(typo.getMessage().contains("'my.NoSuchMain' is neither a class on the launcher's class path"), typo.getMessage());
        assertTrue(typo.getMessage().contains("java -cp \"app.jar:libs/*\" org.ddp4j.launch.Launcher ... my.NoSuchMain"),
                typo.getMessage());
        assertTrue(typo.getMessage().contains("java -jar ddp4j-VERSION-launcher.jar --classpath app.jar ... my.NoSuchMain"),
                typo.getMessage());
        assertTrue(typo.getMessage().contains("As a command, my.NoSuchMain is not on PATH"), typo.getMessage());
    }

    @Test
    void theClassPathOptionAddsUserJarsForTheWorkersAndTheMainClassCheck(@TempDir Path dir) throws IOException {
        Path jar = compileIntoJar(dir, "ext.UserMain", "package ext; public class UserMain { public static void main(String[] a) {} }");
        assertFalse(WorkerCommand.isJavaClass("ext.UserMain", Map.of()), "not on the launcher's own class path");
        for (String cp : List.of(jar.toString(), dir + File.separator + "*", "/nonexistent.jar" + File.pathSeparator + jar)) {
            Map<String, String> env = Map.of(WorkerCommand.CLASSPATH_ENV, cp);
            assertTrue(WorkerCommand.isJavaClass("ext.UserMain", env), cp);
            List<String> argv = WorkerCommand.argv(List.of("ext.UserMain"), env);
            assertEquals(System.getProperty("java.class.path") + File.pathSeparator + cp, argv.get(2));
        }
        assertEquals(List.of(jar), WorkerCommand.expandClassPath(dir + File.separator + "*"));
        var e = assertThrows(WorkerCommand.UnknownWorkerException.class,
                () -> WorkerCommand.argv(List.of("ext.Other"), Map.of(WorkerCommand.CLASSPATH_ENV, jar.toString())));
        assertTrue(e.getMessage().contains("neither a class on the workers' class path (the launcher's, then --classpath / "
                + WorkerCommand.CLASSPATH_ENV + "=" + jar + ")"), e.getMessage());
    }

    /** Compiles one class from {@code source} and packs it as {@code dir/user.jar}. */
    static Path compileIntoJar(Path dir, String className, String source) throws IOException {
        Path src = dir.resolve("src");
        Path classes = dir.resolve("classes");
        Path file = src.resolve(className.replace('.', '/') + ".java");
        Files.createDirectories(file.getParent());
        Files.writeString(file, source);
        int rc = ToolProvider.getSystemJavaCompiler().run(null, null, null, "-d", classes.toString(), file.toString());
        assertEquals(0, rc, "javac failed");
        Path jar = dir.resolve("user.jar");
        String entry = className.replace('.', '/') + ".class";
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            out.putNextEntry(new JarEntry(entry));
            out.write(Files.readAllBytes(classes.resolve(entry)));
            out.closeEntry();
        }
        return jar;
    }

    @Test
    void javaOptionsSplitLikeAShell() {
        assertEquals(List.of(), WorkerJvm.splitOptions("   "));
        assertEquals(List.of("-Xmx4g", "-Da=b c", "-Dd=it's", "-De=x y"),
                WorkerJvm.splitOptions(" -Xmx4g '-Da=b c'\t\"-Dd=it's\" -De=x\\ y "));
        assertEquals(List.of(""), WorkerJvm.splitOptions("''"));
    }
}
