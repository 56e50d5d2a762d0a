package org.ddp4j.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.serialization.SafeTensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A partition written by the executor's pure-Java writer reads back as the rows it was given. */
class PartitionDatasetTest {
    @TempDir
    Path dir;

    private static List<LabeledExample> rows(int n) {
        List<LabeledExample> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            float[] f = new float[6];
            for (int j = 0; j < f.length; j++) {
                f[j] = i * 10 + j + 0.25f;
            }
            rows.add(new LabeledExample(f, i % 3));
        }
        return rows;
    }

    @Test
    void rowsComeBackAsWritten() throws Exception {
        Path file = dir.resolve("p.safetensors");
        assertEquals(5, PartitionFile.write(rows(5).iterator(), new long[] {1, 2, 3}, file));
        // a valid safetensors file for ddp4j's strict reader (header tiles the data, 8-byte aligned)
        assertEquals(Map.of(), SafeTensors.loadMetadata(file));
        PartitionDataset ds = PartitionDataset.open(file);
        assertEquals(5, ds.size());
        assertArrayEquals(new long[] {1, 2, 3}, ds.exampleShape());
        for (int i = 0; i < 5; i++) {
            float[] got = new float[6];
            ds.copyFeatures(i, got, 0);
            assertArrayEquals(rows(5).get(i).features(), got, 0f);
            assertEquals(i % 3, ds.label(i));
        }
    }

    @Test
    void anEmptyPartitionIsAnEmptyDataset() throws Exception {
        Path file = dir.resolve("empty.safetensors");
        assertEquals(0, PartitionFile.write(List.<LabeledExample>of().iterator(), new long[] {4}, file));
        assertEquals(0, PartitionDataset.open(file).size());
    }

    @Test
    void aRowOfTheWrongLengthIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PartitionFile.write(rows(3).iterator(), new long[] {1, 28, 28}, dir.resolve("bad.safetensors")));
        assertTrue(e.getMessage().contains("row 0 of this partition has 6 features")
                && e.getMessage().contains("[1, 28, 28] needs 784"), e.getMessage());
    }

    @Test
    void openWithoutTheVariableSaysWhereItComesFrom() {
        if (System.getenv(PartitionDataset.ENV) != null) {
            return; // run inside a SparkDistributor worker: the variable is real
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, PartitionDataset::open);
        assertTrue(e.getMessage().contains("DDP4J_SPARK_PARTITION is not set") && e.getMessage().contains("runOnPartitions"),
                e.getMessage());
    }
}
