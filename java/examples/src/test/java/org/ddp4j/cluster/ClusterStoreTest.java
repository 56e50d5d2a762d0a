package org.ddp4j.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.data.MnistDataset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The store lets no stranger in. A process on a third host, with a secret of its own
 * ({@code DDP4J_STORE_SECRET}), is refused and logged, and a flood of connections announcing
 * 1 GiB keys does not disturb the job; a node whose secret differs fails at connect and says how
 * to give it the same secret.
 *
 * <p>Needs the authenticated store. Without it the stranger gets in and writes
 * the failure key, which stops the job; each flooded connection makes the store allocate 1 GiB
 * (OutOfMemoryError in a 512 MiB launcher); and a node with another secret joins the job.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ClusterStoreTest {
    @RegisterExtension
    static final NetnsCluster CLUSTER = new NetnsCluster(3);

    private static final String STRANGER = "org.ddp4j.cluster.StoreStranger";

    @Test
    void strangerIsRefusedAndTheJobGoesOnUndisturbed() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        String clean = TwoNodeJob.cleanConvNetResult(CLUSTER);
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        String port = Integer.toString(job.port);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));

        // The job's hosts take their secret from ~/.ddp4j/store-secret; the stranger brings another.
        HostProcess intruder = CLUSTER.startJava(3, "intruder", Map.of("DDP4J_STORE_SECRET", "not-the-job-secret"),
                List.of("-Xmx128m"), STRANGER, List.of("intrude", CLUSTER.address(1), port));
        int intruded = intruder.awaitExit(Duration.ofSeconds(60));
        HostProcess flood = CLUSTER.startJava(3, "flood", Map.of(), List.of("-Xmx128m"), STRANGER,
                List.of("flood", CLUSTER.address(1), port, "8"));
        flood.awaitExit(Duration.ofSeconds(60));

        int code0 = job.node0.awaitExit(Duration.ofSeconds(240));
        int code1 = job.node1.awaitExit(Duration.ofSeconds(240));
        String all = intruder.describe() + "\n" + flood.describe() + "\n" + job.describe();
        assertEquals(0, intruded, "a client without the job's secret got into the store\n" + all);
        assertTrue(intruder.output().contains("stranger: refused: "), all);
        assertEquals(0, code0, "the job did not survive the stranger\n" + all);
        assertEquals(0, code1, "the job did not survive the stranger\n" + all);
        assertTrue(job.node0.output().contains("10.77.0.3"), "node 0's store did not log the refused client 10.77.0.3\n" + all);
        assertTrue(!job.node0.output().contains("OutOfMemoryError"), "the store allocated what the flood announced\n" + all);
        assertEquals(clean, job.convNetResult(), all);
    }

    @Test
    void nodeWithAnotherSecretFailsAtConnectSayingHowToShareIt() throws Exception {
        int port = CLUSTER.nextPort();
        List<String> linear = List.of("org.ddp4j.examples.LinearDemo", "--device", "cpu");
        HostProcess node0 = CLUSTER.startLauncher(0, 2, port, Map.of("DDP4J_STORE_SECRET", "secret-of-node-0"), linear);
        HostProcess node1 = CLUSTER.startLauncher(1, 2, port, Map.of("DDP4J_STORE_SECRET", "secret-of-node-1"), linear);
        int code1 = node1.awaitExit(Duration.ofSeconds(60));
        String all = node0.describe() + "\n" + node1.describe();
        assertNotEquals(0, code1, "node 1 joined a store whose secret differs from its own\n" + all);
        assertTrue(node1.output().contains("DDP4J_STORE_SECRET"), "node 1's error does not say how to give it the same"
                + " secret (DDP4J_STORE_SECRET)\n" + all);
        assertTrue(!node1.output().contains("[rank1]"), "node 1 started a worker\n" + all);
    }
}
