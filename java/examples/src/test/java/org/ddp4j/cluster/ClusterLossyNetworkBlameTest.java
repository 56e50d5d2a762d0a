package org.ddp4j.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A network that loses node 1's collective data but not the store's traffic (every packet dropped
 * except those of the store's port): what 30% loss does to a connection in TCP backoff, made
 * certain. The launchers' keep-alive still gets through while the workers' data stalls until the
 * collective timeout.
 * Both launchers must then name the network between the two hosts, with the peer alive, not the
 * rank that waited. And with 30% random loss both ways and a long collective timeout, both nodes
 * show stall warnings within the bound while the job goes on.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ClusterLossyNetworkBlameTest {
    @RegisterExtension
    static final NetnsCluster CLUSTER = new NetnsCluster(2);

    @TempDir
    Path dir;

    @Test
    void aCollectiveTimeoutUnderPacketLossBlamesTheNetworkBetweenTheHosts() throws Exception {
        // A short collective timeout; a keep-alive timeout long enough to ride out the loss.
        Map<String, String> env = Map.of("DDP4J_TIMEOUT_SECONDS", "8", "DDP4J_KEEPALIVE_TIMEOUT", "120");
        List<String> worker = List.of("org.ddp4j.launch.LaunchTestWorker", "train", dir.toString(), "100000");
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, env, env, worker);
        job.node0.awaitOutput("[rank0]: step 20", Duration.ofSeconds(120));
        // Every packet between the hosts is lost except the store's (the launchers' keep-alive): what 30%
        // loss does to a connection in TCP backoff, made certain, so the collective times out at once.
        CLUSTER.dropAllBut(2, "both", job.port);
        int c0 = job.node0.awaitExit(Duration.ofSeconds(240));
        int c1 = job.node1.awaitExit(Duration.ofSeconds(60));
        assertNotEquals(0, c0, job.describe());
        assertNotEquals(0, c1, job.describe());
        String cause0 = rootCause(job.node0.output());
        String cause1 = rootCause(job.node1.output());
        assertTrue(cause0.startsWith("the network between node "), job.describe());
        assertTrue(cause0.contains("node 0 (10.77.0.1)") && cause0.contains("node 1 (10.77.0.2)"), job.describe());
        assertTrue(cause0.contains("was alive (its keep-alive arrived"), job.describe());
        assertTrue(cause0.contains("data did not get through - a network problem between the two hosts"), job.describe());
        assertEquals(cause0, cause1, "both nodes must name the same root cause\n" + job.describe());
        assertFalse(job.describe().contains("root cause: rank"), job.describe());
    }

    @Test
    void thirtyPercentLossBothWaysShowsStallLinesOnBothNodesWhileTheJobRuns() throws Exception {
        // The case: the ConvNet demo (a 105 KB all-reduce per step) under 30% loss both ways.
        // Stall warnings after 3 s, a collective timeout far beyond the test: the loss must warn, never fail.
        Map<String, String> env = Map.of("DDP4J_STALL_WARNING_SECONDS", "3", "DDP4J_TIMEOUT_SECONDS", "600",
                "DDP4J_KEEPALIVE_TIMEOUT", "120");
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, env, env, TwoNodeJob.CONVNET);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));
        CLUSTER.loss(2, 30, "both");
        // The bound: DDP4J_STALL_WARNING_SECONDS + 30 s. Each node shows its own rank's line and,
        // relayed through the store, the other node's.
        job.node0.awaitOutput("ddp4j: stall: rank ", Duration.ofSeconds(3 + 30));
        job.node1.awaitOutput("ddp4j: stall: rank ", Duration.ofSeconds(15));
        assertTrue(job.node0.isAlive() && job.node1.isAlive(), "a stall warning must not end the job\n" + job.describe());
        CLUSTER.clear(2);
        job.awaitSuccess(Duration.ofSeconds(120)); // the warnings never failed it
    }

    /** The text after "root cause: " on the launcher's summary line, without the consequences. */
    private static String rootCause(String output) {
        String line = output.lines().filter(l -> l.contains("the job failed; root cause: ")).findFirst()
                .orElse("<no root cause line>");
        String cause = line.substring(line.indexOf("root cause: ") + "root cause: ".length());
        int consequences = cause.indexOf("; failed as a consequence: ");
        return consequences < 0 ? cause : cause.substring(0, consequences);
    }
}
