package org.ddp4j.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * scripts/cluster.sh itself: the hosts see only each other, and a run whose owner dies (a test
 * JVM killed midway) leaves no namespace, process, filter or state behind.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ClusterScriptTest {
    @RegisterExtension
    static final NetnsCluster CLUSTER = new NetnsCluster(2);

    /** Runs of this class besides CLUSTER's, torn down after each test whatever happened. */
    private final List<String> otherRuns = new ArrayList<>();
    private final List<Process> fakeOwners = new ArrayList<>();

    @AfterEach
    void tearDownOtherRuns() throws Exception {
        fakeOwners.forEach(Process::destroyForcibly);
        for (String run : otherRuns) {
            script(List.of("--run", run, "down"));
        }
    }

    @Test
    void hostsHaveOnlyTheirPrivateAddressAndNoRouteOut() throws Exception {
        String addresses = CLUSTER.script("exec", "2", "ip", "-o", "-4", "addr", "show");
        assertTrue(addresses.contains("eth0    inet 10.77.0.2/24"), addresses);
        assertTrue(addresses.contains("lo    inet 127.0.0.1/8"), "loopback is not up: " + addresses);
        assertEquals(2, addresses.lines().count(), addresses);
        String routes = CLUSTER.script("exec", "2", "ip", "-4", "route", "show");
        assertEquals("10.77.0.0/24 dev eth0 proto kernel scope link src 10.77.0.2", routes.strip(), "a route out of the cluster");
        // The root namespace gets nothing: no address of the cluster, no interface of it.
        String root = run(List.of("ip", "-o", "addr", "show")).output;
        assertFalse(root.contains("10.77.0."), root);
        String links = run(List.of("ip", "-o", "link", "show")).output;
        assertFalse(links.contains("d4c") || links.contains("link-netns d4c-" + CLUSTER.run()), links);
    }

    @Test
    void runOfAKilledOwnerIsTornDownByItsWatchdog() throws Exception {
        Process owner = new ProcessBuilder("sleep", "600").start(); // stands for a test JVM
        fakeOwners.add(owner);
        String run = "w" + Long.toString(owner.pid(), 36);
        otherRuns.add(run);
        List<String> as = List.of("--run", run, "--owner", Long.toString(owner.pid()));
        assertEquals(0, script(concat(as, "up", "2")).exitCode);
        // what a test leaves in the hosts: a process in each, packet filters, a cap, a link down
        Process inHost1 = new ProcessBuilder(concat(List.of("bash", NetnsCluster.findScript().toString()), concat(as,
                "exec", "1", "sleep", "600"))).redirectOutput(new File("/dev/null")).start();
        Process inHost2 = new ProcessBuilder(concat(List.of("bash", NetnsCluster.findScript().toString()), concat(as,
                "exec", "2", "sleep", "600"))).redirectOutput(new File("/dev/null")).start();
        assertEquals(0, script(concat(as, "loss", "1", "10", "in")).exitCode);
        assertEquals(0, script(concat(as, "cap", "2", "1mbit", "both")).exitCode);
        assertEquals(0, script(concat(as, "link", "2", "down")).exitCode);
        Process watchdog = new ProcessBuilder(concat(List.of("bash", NetnsCluster.findScript().toString()), concat(as, "watch")))
                .redirectErrorStream(true).start();
        fakeOwners.add(watchdog);

        owner.destroyForcibly(); // SIGKILL: no hook, no afterAll
        assertTrue(watchdog.waitFor(30, TimeUnit.SECONDS), "the watchdog did not finish within 30 s");
        String said = new String(watchdog.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(said.contains("the owner of run " + run + " has gone; tearing the run down"), said);
        assertTrue(inHost1.waitFor(10, TimeUnit.SECONDS) && inHost2.waitFor(10, TimeUnit.SECONDS),
                "processes in the hosts survived the teardown");
        assertNoTrace(run);
    }

    @Test
    void upReapsTheLeftoversOfARunWhoseOwnerDied() throws Exception {
        Process owner = new ProcessBuilder("sleep", "600").start();
        fakeOwners.add(owner);
        String crashed = "c" + Long.toString(owner.pid(), 36);
        otherRuns.add(crashed);
        assertEquals(0, script(List.of("--run", crashed, "--owner", Long.toString(owner.pid()), "up", "1")).exitCode);
        owner.destroyForcibly();
        owner.waitFor(10, TimeUnit.SECONDS);

        String next = "n" + Long.toString(owner.pid(), 36);
        otherRuns.add(next);
        Result up = script(List.of("--run", next, "up", "1"));
        assertEquals(0, up.exitCode, up.output);
        assertTrue(up.output.contains("removing leftovers of run " + crashed + " (its owner has gone)"), up.output);
        assertNoTrace(crashed);
        // down is idempotent
        assertEquals(0, script(List.of("--run", next, "down")).exitCode);
        assertEquals(0, script(List.of("--run", next, "down")).exitCode);
        assertNoTrace(next);
    }

    @Test
    void badInputIsNamedWithTheFix() throws Exception {
        Result noHost = script(List.of("--run", CLUSTER.run(), "exec", "9", "true"));
        assertNotEquals(0, noHost.exitCode);
        assertTrue(noHost.output.contains("host 9 of run " + CLUSTER.run() + " does not exist"), noHost.output);
        Result badLoss = script(List.of("--run", CLUSTER.run(), "loss", "1", "150"));
        assertTrue(badLoss.exitCode != 0 && badLoss.output.contains("PERCENT must be 1..100, got '150'"), badLoss.output);
        Result badRate = script(List.of("--run", CLUSTER.run(), "cap", "1", "fast"));
        assertTrue(badRate.exitCode != 0 && badRate.output.contains("rate 'fast' must be a number and a unit"), badRate.output);
        Result badRun = script(List.of("--run", "Bad_Run", "up", "1"));
        assertTrue(badRun.exitCode != 0 && badRun.output.contains("must be 1-12 characters of a-z and 0-9"), badRun.output);
        Result twice = script(List.of("--run", CLUSTER.run(), "up", "2"));
        assertTrue(twice.exitCode != 0 && twice.output.contains("run " + CLUSTER.run() + " is already up"), twice.output);
    }

    /** No namespace, state directory or process of {@code run} is left. */
    private static void assertNoTrace(String run) throws Exception {
        String namespaces = run(List.of("ip", "netns", "list")).output;
        assertFalse(namespaces.contains("d4c-" + run + "-"), namespaces);
        assertFalse(Files.exists(Path.of("/run/ddp4j-cluster", run)), "state of run " + run + " left in /run/ddp4j-cluster");
        assertFalse(Files.exists(Path.of("/run/netns", "d4c-" + run + "-sw")));
    }

    private record Result(int exitCode, String output) {}

    private static Result script(List<String> args) throws Exception {
        return run(concat(List.of("bash", NetnsCluster.findScript().toString()), args));
    }

    private static Result run(List<String> argv) throws Exception {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8); // ends when the process does
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), argv + " did not finish");
        return new Result(p.exitValue(), out);
    }

    private static List<String> concat(List<String> head, String... tail) {
        List<String> all = new ArrayList<>(head);
        all.addAll(List.of(tail));
        return all;
    }

    private static List<String> concat(List<String> head, List<String> tail) {
        List<String> all = new ArrayList<>(head);
        all.addAll(tail);
        return all;
    }
}
