package org.ddp4j.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.data.MnistDataset;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A poor network that still carries the data: random packet loss in one direction and a bandwidth
 * cap, set mid-training on node 1's host. TCP retransmits and waits; training ends exactly as an
 * undisturbed run does.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ClusterNetworkTest {
    @RegisterExtension
    static final NetnsCluster CLUSTER = new NetnsCluster(2);

    @BeforeEach
    void needsFashionMnist() {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
    }

    @Test
    void randomLossOfOutgoingPacketsIsRiddenOut() throws Exception {
        String clean = TwoNodeJob.cleanConvNetResult(CLUSTER);
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));
        CLUSTER.loss(2, 5, "out");
        job.awaitSuccess(Duration.ofSeconds(240));
        Map<String, Long> counters = CLUSTER.counters(2);
        assertTrue(counters.getOrDefault("dropped_out", 0L) > 0, "no packet was dropped: " + counters);
        assertEquals(clean, job.convNetResult(), job.describe());
    }

    @Test
    void bandwidthCapIsRiddenOut() throws Exception {
        String clean = TwoNodeJob.cleanConvNetResult(CLUSTER);
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));
        CLUSTER.cap(2, "40mbit", "both");
        job.awaitSuccess(Duration.ofSeconds(240));
        Map<String, Long> counters = CLUSTER.counters(2);
        assertTrue(counters.getOrDefault("overlimits_out", 0L) + counters.getOrDefault("overlimits_in", 0L) > 0,
                "the cap never held a packet back: " + counters);
        assertEquals(clean, job.convNetResult(), job.describe());
    }
}
