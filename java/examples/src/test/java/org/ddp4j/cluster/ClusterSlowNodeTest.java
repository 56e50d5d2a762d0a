package org.ddp4j.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
 * A node that is only slow is not declared dead: a launcher or a worker stopped for 10 s
 * (SIGSTOP, then SIGCONT) mid-training is ridden out, and training ends exactly as an undisturbed
 * run does.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ClusterSlowNodeTest {
    @RegisterExtension
    static final NetnsCluster CLUSTER = new NetnsCluster(2);

    private static final Duration PAUSE = Duration.ofSeconds(10);

    @BeforeEach
    void needsFashionMnist() {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
    }

    @Test
    void launcherServingTheStoreStoppedFor10sIsRiddenOut() throws Exception {
        String clean = TwoNodeJob.cleanConvNetResult(CLUSTER);
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));
        pause(job.node0.pid());
        job.awaitSuccess(Duration.ofSeconds(240));
        assertEquals(clean, job.convNetResult(), job.describe());
    }

    @Test
    void workerStoppedFor10sIsRiddenOut() throws Exception {
        String clean = TwoNodeJob.cleanConvNetResult(CLUSTER);
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        job.node0.awaitOutput(TwoNodeJob.CONVNET_UNDER_WAY, Duration.ofSeconds(120));
        List<Long> workers = job.node1.childPids();
        assertEquals(1, workers.size(), "node 1's launcher should have one worker\n" + job.describe());
        pause(workers.get(0));
        job.awaitSuccess(Duration.ofSeconds(240));
        assertEquals(clean, job.convNetResult(), job.describe());
    }

    /** SIGSTOP, 10 s, SIGCONT (also when the wait is interrupted, so the cleanup finds it running). */
    private static void pause(long pid) throws Exception {
        HostProcess.signal(pid, "STOP");
        try {
            Thread.sleep(PAUSE.toMillis());
        } finally {
            HostProcess.signal(pid, "CONT");
        }
    }
}
