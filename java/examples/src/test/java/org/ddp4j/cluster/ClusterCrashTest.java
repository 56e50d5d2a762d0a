package org.ddp4j.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ddp4j.data.MnistDataset;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * kill -9 mid-training. Of node 1's launcher: node 0 stops within 30 s naming node 1 (10.77.0.2),
 * and node 1's worker, orphaned, exits too. Of node 1's worker: every launcher names that rank,
 * its node and the signal as the root cause, not a rank that failed because of it.
 *
 * <p>Needs the launchers' keep-alive and root-cause naming. Without them node 0
 * waits out the rendezvous timeout while node 1's orphaned worker trains on, and node 0 blames
 * its own rank 0 for the killed worker.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ClusterCrashTest {
    @RegisterExtension
    static final NetnsCluster CLUSTER = new NetnsCluster(2);

    @BeforeEach
    void needsFashionMnist() {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
    }

    @Test
    void killedLauncherIsNamedByTheOtherNodeAndTakesItsWorkerAlong() throws Exception {
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));
        List<Long> workers = job.node1.childPids();
        assertEquals(1, workers.size(), "node 1's launcher should have one worker\n" + job.describe());
        job.node1.signal("KILL");
        long killed = System.nanoTime();

        int code0 = job.node0.awaitExit(Duration.ofSeconds(30));
        System.out.println("kill -9 of node 1's launcher: node 0 exited after " + (System.nanoTime() - killed) / 1_000_000 + " ms");
        assertNotEquals(0, code0, job.describe());
        assertTrue(job.node0.output().contains("node 1 (10.77.0.2)"), "node 0 does not name the node it lost as"
                + " \"node 1 (10.77.0.2)\"\n" + job.describe());
        // node 1's worker dies with its launcher; node 0's workers with theirs
        Duration rest = Duration.ofSeconds(30).minusNanos(System.nanoTime() - killed);
        try {
            CLUSTER.awaitNoProcesses(rest.isNegative() ? Duration.ZERO : rest, 1, 2);
        } catch (AssertionError e) {
            throw new AssertionError("30 s after kill -9 of node 1's launcher (its worker was pid " + workers.get(0)
                    + "): " + e.getMessage() + "\n" + job.describe());
        }
    }

    @Test
    void killedWorkerIsNamedAsTheRootCauseByEveryLauncher() throws Exception {
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));
        List<Long> workers = job.node1.childPids();
        assertEquals(1, workers.size(), "node 1's launcher should have one worker\n" + job.describe());
        HostProcess.signal(workers.get(0), "KILL");

        int code1 = job.node1.awaitExit(Duration.ofSeconds(60));
        int code0 = job.node0.awaitExit(Duration.ofSeconds(60));
        assertNotEquals(0, code0, job.describe());
        assertNotEquals(0, code1, job.describe());
        String rootCause = "rank 1 (node 1, local rank 0) was killed by signal 9";
        assertTrue(job.node1.output().contains(rootCause), "node 1 does not say \"" + rootCause + "\"\n" + job.describe());
        assertTrue(job.node0.output().contains(rootCause), "node 0 does not say \"" + rootCause + "\"\n" + job.describe());
        CLUSTER.awaitNoProcesses(Duration.ofSeconds(30), 1, 2);
    }
}
