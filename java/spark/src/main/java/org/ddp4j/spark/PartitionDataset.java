package org.ddp4j.spark;

import java.nio.file.Path;
import java.util.Map;
import org.ddp4j.data.Dataset;
import org.ddp4j.data.TensorDataset;
import org.ddp4j.internal.Setting;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * The rows of this rank's Spark partition, in a worker started by
 * {@link SparkDistributor#runOnPartitions}: the partition's Spark task wrote them to a local
 * safetensors file ({@code features} float32 [N, ...], {@code labels} int64 [N]) and passed its path
 * in {@code DDP4J_SPARK_PARTITION}. Each rank trains on its own rows, in place of a
 * {@link org.ddp4j.data.DistributedSampler} over a shared dataset; partitions may differ in
 * size, so train inside {@code ddp.join()}:
 *
 * <pre>{@code
 * Dataset rows = PartitionDataset.open();
 * DataLoader loader = new DataLoader(rows, 32, new RandomSampler(rows.size(), new Generator(seed + rank)), false);
 * try (var join = ddp.join()) {
 *     for (Batch b : loader) { ... }
 * }
 * }</pre>
 *
 * The values are read into Java arrays once (as {@link TensorDataset}); the file stays where the
 * task wrote it and the task deletes it when the worker has ended.
 */
public final class PartitionDataset implements Dataset {
    /** The environment variable holding the partition file's path. */
    public static final String ENV = Setting.SPARK_PARTITION.variable();

    private final TensorDataset rows;
    private final Path file;

    private PartitionDataset(TensorDataset rows, Path file) {
        this.rows = rows;
        this.file = file;
    }

    /**
     * Opens the partition named by {@code DDP4J_SPARK_PARTITION}.
     *
     * @throws IllegalStateException if the variable is not set (the worker was not started by runOnPartitions)
     * @throws java.io.UncheckedIOException if the file is missing or not a partition file
     */
    public static PartitionDataset open() {
        String path = System.getenv(ENV);
        if (path == null || path.isBlank()) {
            throw new IllegalStateException(ENV + " is not set: PartitionDataset.open() reads the partition that"
                    + " SparkDistributor.runOnPartitions hands to each rank; run this trainer through runOnPartitions,"
                    + " or open a partition file yourself with PartitionDataset.open(Path)");
        }
        return open(Path.of(path.trim()));
    }

    /**
     * Opens a partition file as {@link SparkDistributor#runOnPartitions} writes it.
     *
     * @throws java.io.UncheckedIOException if the file is missing, or lacks {@code features} float32
     *     [N, ...] or {@code labels} int64 [N]
     */
    public static PartitionDataset open(Path file) {
        try (var scope = Tensors.scope()) { // frees the loaded tensors once copied
            Map<String, Tensor> tensors = SafeTensors.loadFile(file);
            Tensor features = tensors.get(PartitionFile.FEATURES);
            Tensor labels = tensors.get(PartitionFile.LABELS);
            if (features == null || labels == null) {
                throw new java.io.UncheckedIOException(new java.io.IOException(file + " is not a Spark partition file: it"
                        + " needs tensors '" + PartitionFile.FEATURES + "' and '" + PartitionFile.LABELS + "', it has "
                        + tensors.keySet()));
            }
            return new PartitionDataset(new TensorDataset(features, labels), file);
        }
    }

    /** The file the rows came from. */
    public Path file() {
        return file;
    }

    @Override
    public int size() {
        return rows.size();
    }

    @Override
    public long[] exampleShape() {
        return rows.exampleShape();
    }

    @Override
    public void copyFeatures(int index, float[] dst, int offset) {
        rows.copyFeatures(index, dst, offset);
    }

    @Override
    public boolean hasLabels() {
        return true;
    }

    @Override
    public long label(int index) {
        return rows.label(index);
    }
}
