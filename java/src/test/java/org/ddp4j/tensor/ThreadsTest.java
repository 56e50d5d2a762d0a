package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.testing.Cpus;
import org.junit.jupiter.api.Test;

/**
 * Threads.setNumThreads / getNumThreads (torch.set_num_threads / get_num_threads), and the default
 * each new JVM picks: OMP_NUM_THREADS when set, else its CPUs divided by LOCAL_WORLD_SIZE.
 */
class ThreadsTest {

    @Test
    void setNumThreadsChangesTheCountAndRefusesLessThanOne() {
        int before = Threads.getNumThreads();
        try {
            Threads.setNumThreads(3);
            assertEquals(3, Threads.getNumThreads());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Threads.setNumThreads(0));
            assertTrue(e.getMessage().contains("at least 1, got 0"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> Threads.setNumThreads(-4));
            assertEquals(3, Threads.getNumThreads(), "a refused count leaves the setting alone");
            Threads.setNumThreads(1);
            assertEquals(1, Threads.getNumThreads());
        } finally {
            Threads.setNumThreads(before);
        }
    }

    /** The output of a fresh JVM that prints its default, started with OMP_NUM_THREADS and LOCAL_WORLD_SIZE removed and then {@code env}. */
    private static String childDefault(Map<String, String> env) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(List.of(java, "-Xmx64m", "-XX:TieredStopAtLevel=1", "-cp",
                System.getProperty("java.class.path"), ThreadsDefaultMain.class.getName()));
        pb.environment().remove("OMP_NUM_THREADS"); // surefire sets it to 1 for the tests
        pb.environment().remove("LOCAL_WORLD_SIZE");
        pb.environment().putAll(env);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child JVM did not finish within 60 s");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    void theDefaultIsTheCpusDividedByLocalWorldSizeUnlessOmpNumThreadsIsSet() throws Exception {
        int cpus = Cpus.allowed();
        assertEquals("threads=" + cpus + "\n", childDefault(Map.of()));
        assertEquals("threads=" + Math.max(1, cpus / 2) + "\n", childDefault(Map.of("LOCAL_WORLD_SIZE", "2")));
        assertEquals("threads=1\n", childDefault(Map.of("LOCAL_WORLD_SIZE", Integer.toString(cpus + 1))),
                "more ranks than CPUs: one thread each, never 0");
        assertEquals("threads=3\n", childDefault(Map.of("OMP_NUM_THREADS", "3", "LOCAL_WORLD_SIZE", "2")),
                "the user's OMP_NUM_THREADS wins");
    }

    @Test
    void aMalformedOmpNumThreadsIsIgnoredWithAWarningNamingIt() throws Exception {
        int cpus = Cpus.allowed();
        String out = childDefault(Map.of("OMP_NUM_THREADS", "four"));
        assertTrue(out.contains("ddp4j: warning: ignoring OMP_NUM_THREADS=\"four\": not a positive integer"), out);
        assertTrue(out.endsWith("threads=" + cpus + "\n"), out);
    }
}
