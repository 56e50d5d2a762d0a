package org.ddp4j.cluster;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.ddp4j.data.MnistDataset;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A network partition mid-training ends the job within 60 s on every host, and each launcher
 * names the node it lost as {@code node N (ADDRESS)}: node 0 names node 1 (10.77.0.2), node 1
 * names node 0 (10.77.0.1).
 *
 * <p>Needs the launchers' keep-alive. Without it both hosts wait in a
 * collective with PyTorch's 30-minute timeout.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ClusterPartitionTest {
    @RegisterExtension
    static final NetnsCluster CLUSTER = new NetnsCluster(2);

    /** The bound: every process on every host has exited this long after the partition. */
    private static final Duration ALL_GONE = Duration.ofSeconds(60);

    @BeforeEach
    void needsFashionMnist() {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
    }

    @Test
    void linkDownEndsTheJobNamingTheLostNode() throws Exception {
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));
        CLUSTER.link(2, false);
        assertPartitionEndsTheJob(job);
    }

    @Test
    void totalPacketLossEndsTheJobNamingTheLostNode() throws Exception {
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));
        CLUSTER.drop(2, "both"); // the link stays up, nothing gets through: no error from the kernel, only silence
        assertPartitionEndsTheJob(job);
    }

    private static void assertPartitionEndsTheJob(TwoNodeJob job) throws InterruptedException {
        Duration took;
        try {
            took = CLUSTER.awaitNoProcesses(ALL_GONE, 1, 2);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\n" + job.describe());
        }
        System.out.println("partition: every process exited " + took.toMillis() + " ms after it");
        assertNotEquals(0, job.node0.awaitExit(Duration.ofSeconds(5)), job.describe());
        assertNotEquals(0, job.node1.awaitExit(Duration.ofSeconds(5)), job.describe());
        assertTrue(job.node0.output().contains("node 1 (10.77.0.2)"), "node 0 does not name the node it lost as"
                + " \"node 1 (10.77.0.2)\"\n" + job.describe());
        assertTrue(job.node1.output().contains("node 0 (10.77.0.1)"), "node 1 does not name the node it lost as"
                + " \"node 0 (10.77.0.1)\"\n" + job.describe());
    }
}
