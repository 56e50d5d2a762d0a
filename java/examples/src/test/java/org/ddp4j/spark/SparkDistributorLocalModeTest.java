package org.ddp4j.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.ddp4j.data.MnistDataset;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * SparkDistributor with Spark's {@code local[2]} master, the first thing a user tries: the tasks
 * run in this JVM (the driver), each worker still a JVM of its own.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SparkDistributorLocalModeTest {
    private static final Pattern CRC = Pattern.compile("check rank=(\\d) world=2 .* param_crc=([0-9a-f]{8})");
    private static SparkContext sc;

    @BeforeAll
    static void startSpark() {
        assumeTrue(LocalSparkCluster.sparkAvailable(), "the Spark jars (org.apache.spark:spark-core_2.13, a provided"
                + " dependency) are not on the test class path; scripts/setup.sh fetches them");
        for (String logger : List.of("org.apache.spark", "org.sparkproject", "io.netty", "org.apache.hadoop")) {
            System.setProperty("org.slf4j.simpleLogger.log." + logger, "warn");
        }
        sc = new SparkContext(new SparkConf().setMaster("local[2]").setAppName("ddp4j SparkDistributorLocalModeTest")
                .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.ui.enabled", "false"));
    }

    @AfterAll
    static void stopSpark() {
        if (sc != null) {
            sc.stop();
        }
    }

    @Test
    void twoRanksTrainToEqualParameters() {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        List<WorkerResult> results = new SparkDistributor(2).sparkContext(sc).env("OMP_NUM_THREADS", "1")
                .run("org.ddp4j.examples.SparkConvNetTrain", "--limit", "100", "--batch-size", "25");
        String[] crc = new String[2];
        for (WorkerResult r : results) {
            for (String line : r.lastLines()) {
                Matcher m = CRC.matcher(line);
                if (m.find()) {
                    assertEquals(Integer.toString(r.rank()), m.group(1));
                    crc[r.rank()] = m.group(2);
                }
            }
        }
        assertTrue(crc[0] != null && crc[0].equals(crc[1]), results.toString());
    }

    @Test
    void aMainThatCannotRunFailsTheJobWithTheWorkersOwnWords() {
        WorkerFailedException e = assertThrows(WorkerFailedException.class,
                () -> new SparkDistributor(2).sparkContext(sc).run("no.such.TrainMain", "--epochs", "1"));
        assertTrue(e.rank() == 0 || e.rank() == 1, e.getMessage());
        // the rank, how it ended, and its stderr line (unprefixed) that says why
        assertTrue(e.getMessage().startsWith("ddp4j rank " + e.rank() + " (host ") && e.getMessage().contains("exited with code 1")
                && e.getMessage().contains("\nWorkerMain: cannot run no.such.TrainMain"), e.getMessage());
    }
}
