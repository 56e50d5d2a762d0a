package org.ddp4j.cluster;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A job of two launchers, node 0 in host 1 (the master, 10.77.0.1) and node 1 in host 2, one
 * worker each (world size 2), and what the demos print.
 */
final class TwoNodeJob {

    /** The ConvNet demo on 6000 Fashion-MNIST images in batches of 10: 300 steps per rank. */
    static final List<String> CONVNET = List.of("org.ddp4j.examples.ConvNetDemo", "--device", "cpu", "--limit", "6000",
            "--batch-size", "10", "--epochs", "1");

    /** What rank 0 prints a third of the way through {@link #CONVNET}: training is under way. */
    static final String CONVNET_UNDER_WAY = "Step [100/300]";

    /** Steps per rank of {@link #CONVNET}. */
    static final int CONVNET_STEPS = 300;

    private static final Pattern SUMMARY = Pattern.compile(
            "\\[rank(\\d+)\\]: summary rank=(\\d+) world=(\\d+) steps=(\\d+) seconds=\\S+ images_per_s=\\S+ loss=(\\S+)"
                    + "(?: parameters_crc32=(\\p{XDigit}+))?");
    private static final Pattern ACCURACY = Pattern.compile("summary test_accuracy=([\\d.]+)");

    private static String cleanConvNet;

    final int port;
    final HostProcess node0;
    final HostProcess node1;

    private TwoNodeJob(int port, HostProcess node0, HostProcess node1) {
        this.port = port;
        this.node0 = node0;
        this.node1 = node1;
    }

    /** Starts both launchers, each with its own extra environment, on a fresh master port. */
    static TwoNodeJob start(NetnsCluster cluster, Map<String, String> env0, Map<String, String> env1,
            List<String> workerMainAndArgs) throws IOException {
        int port = cluster.nextPort();
        HostProcess n0 = cluster.startLauncher(0, 2, port, env0, workerMainAndArgs);
        HostProcess n1 = cluster.startLauncher(1, 2, port, env1, workerMainAndArgs);
        return new TwoNodeJob(port, n0, n1);
    }

    /** Starts both launchers with the test JVM's environment. */
    static TwoNodeJob start(NetnsCluster cluster, List<String> workerMainAndArgs) throws IOException {
        return start(cluster, Map.of(), Map.of(), workerMainAndArgs);
    }

    /** Waits for both launchers to exit (each within {@code limit}) and fails unless both exit 0. */
    void awaitSuccess(Duration limit) throws InterruptedException {
        int c0 = node0.awaitExit(limit);
        int c1 = node1.awaitExit(limit);
        if (c0 != 0 || c1 != 0) {
            throw new AssertionError("the job failed (exit codes " + c0 + ", " + c1 + ")\n" + describe());
        }
    }

    /** Both launchers' output, for assertion messages. */
    String describe() {
        return node0.describe() + "\n" + node1.describe();
    }

    /**
     * The ConvNet demo's results: each rank's steps, last loss and the CRC of its final parameters,
     * and the test accuracy, as one line.
     */
    String convNetResult() {
        return convNetResult(node0.output() + "\n" + node1.output());
    }

    /** {@link #convNetResult()} of any launcher output holding the demo's summary lines. */
    static String convNetResult(String all) {
        Map<Integer, String> byRank = new TreeMap<>();
        Matcher m = SUMMARY.matcher(all);
        while (m.find()) {
            byRank.put(Integer.parseInt(m.group(2)), "rank " + m.group(2) + ": world " + m.group(3) + ", steps "
                    + m.group(4) + ", loss " + m.group(5) + ", parameters " + m.group(6));
        }
        Matcher a = ACCURACY.matcher(all);
        return String.join("; ", byRank.values()) + "; test accuracy " + (a.find() ? a.group(1) : "missing");
    }

    /** The summary losses of both ranks, in rank order. */
    double[] losses() {
        String all = node0.output() + "\n" + node1.output();
        double[] losses = {Double.NaN, Double.NaN};
        Matcher m = SUMMARY.matcher(all);
        while (m.find()) {
            losses[Integer.parseInt(m.group(2))] = Double.parseDouble(m.group(5));
        }
        return losses;
    }

    /**
     * {@link #convNetResult()} of an undisturbed {@link #CONVNET} job on this cluster, run once per
     * JVM: training is deterministic, so a job that rode out a fault must match it exactly.
     */
    static synchronized String cleanConvNetResult(NetnsCluster cluster) throws IOException, InterruptedException {
        if (cleanConvNet == null) {
            TwoNodeJob job = start(cluster, CONVNET);
            job.awaitSuccess(Duration.ofSeconds(240));
            cleanConvNet = job.convNetResult();
        }
        return cleanConvNet;
    }

    /** Records a clean run's result, so that {@link #cleanConvNetResult} need not run another. */
    static synchronized void recordCleanConvNetResult(String result) {
        if (cleanConvNet == null) {
            cleanConvNet = result;
        }
    }
}
