package org.ddp4j.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.data.MnistDataset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The demos across two hosts of the namespace cluster, one launcher per host, as on two machines. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ClusterDemoTest {
    @RegisterExtension
    static final NetnsCluster CLUSTER = new NetnsCluster(2);

    private static final List<String> LINEAR = List.of("org.ddp4j.examples.LinearDemo", "--epochs", "3", "--device", "cpu");

    @Test
    void linearDemoAcrossTwoHostsPrintsWhatOneHostPrints() throws Exception {
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, LINEAR);
        job.awaitSuccess(Duration.ofSeconds(120));
        String twoHosts = job.node0.output() + "\n" + job.node1.output();
        assertTrue(twoHosts.contains("[rank0]: MASTER_ADDR=10.77.0.1 MASTER_PORT="), job.describe());
        assertTrue(twoHosts.contains("[rank1]: | distributed init (rank 1): tcp://10.77.0.1:"), job.describe());

        // The same job, both ranks on one host (one launcher, two workers): the reference values.
        List<String> args = new ArrayList<>(List.of("--nproc-per-node", "2", "--master-addr", "127.0.0.1",
                "--master-port", Integer.toString(CLUSTER.nextPort())));
        args.addAll(LINEAR);
        HostProcess oneHost = CLUSTER.startJava(1, "onehost", Map.of(), List.of("-Xmx512m"), "org.ddp4j.launch.Launcher", args);
        assertEquals(0, oneHost.awaitExit(Duration.ofSeconds(120)), oneHost.describe());

        for (int rank = 0; rank < 2; rank++) {
            for (String what : List.of("labels:", "parameters after DDP:", "rank " + rank + " batch", "parameters after training:")) {
                String expected = block(oneHost.output(), rank, what);
                assertTrue(!expected.isEmpty(), "the one-host run printed no \"" + what + "\" for rank " + rank + "\n"
                        + oneHost.describe());
                assertEquals(expected, block(twoHosts, rank, what), "rank " + rank + " \"" + what + "\" differs between"
                        + " one host and two hosts\n" + job.describe());
            }
        }
        double[] losses = job.losses();
        assertTrue(oneHost.output().contains("summary rank=0 world=2 steps=6 ") && twoHosts.contains("summary rank=1 world=2 steps=6 "),
                job.describe());
        assertTrue(oneHost.output().contains("loss=" + String.format(java.util.Locale.ROOT, "%.6f", losses[1])),
                "rank 1's last loss " + losses[1] + " differs from the one-host run\n" + oneHost.describe());
    }

    @Test
    void convNetAcrossTwoHostsLearns() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        TwoNodeJob job = TwoNodeJob.start(CLUSTER, TwoNodeJob.CONVNET);
        job.awaitSuccess(Duration.ofSeconds(240));
        String result = job.convNetResult();
        assertTrue(result.startsWith("rank 0: world 2, steps 300, loss ") && result.contains("rank 1: world 2, steps 300, loss "),
                result + "\n" + job.describe());
        for (double loss : job.losses()) {
            // ln(10) = 2.30 is where an untrained 10-class model starts; one batch of 10 is noisy (0.40 and 1.76 here)
            assertTrue(loss > 0 && loss < Math.log(10), "implausible last loss " + loss + ": " + result);
        }
        double accuracy = Double.parseDouble(result.replaceAll(".*test accuracy ", ""));
        assertTrue(accuracy > 0.55, "test accuracy " + accuracy + " after 300 steps (0.66 when written): " + result);
        TwoNodeJob.recordCleanConvNetResult(result);
    }

    /**
     * The lines that rank {@code rank} printed from the first one starting with {@code start} up to
     * the next line that starts a new item (a line whose text does not begin with a space).
     */
    static String block(String output, int rank, String start) {
        String prefix = "[rank" + rank + "]: ";
        StringBuilder b = new StringBuilder();
        boolean inside = false;
        for (String line : output.lines().toList()) {
            if (!line.startsWith(prefix)) {
                continue;
            }
            String body = line.substring(prefix.length());
            if (inside && !body.startsWith(" ")) {
                if (!body.startsWith(start)) {
                    break;
                }
            }
            if (body.startsWith(start)) {
                inside = true;
            }
            if (inside) {
                b.append(body).append('\n');
            }
        }
        return b.toString();
    }
}
