package org.ddp4j.spark;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.StringJoiner;

/**
 * Writes one Spark partition of {@link LabeledExample} rows as a safetensors file that
 * {@link PartitionDataset} (through {@link org.ddp4j.serialization.SafeTensors#loadFile}) reads:
 * {@code features} float32 [N, ...exampleShape] and {@code labels} int64 [N]. Pure Java, so the
 * executor never loads ddp4j's native library; the rows stream through two temporary files, so
 * the partition is never held in memory whole.
 */
final class PartitionFile {
    /** The tensor names in the file. */
    static final String FEATURES = "features";
    static final String LABELS = "labels";

    private PartitionFile() {}

    /**
     * Writes {@code rows} to {@code file}.
     *
     * @return the number of rows written
     * @throws IllegalArgumentException if a row's feature count is not the product of {@code exampleShape}
     */
    static long write(Iterator<LabeledExample> rows, long[] exampleShape, Path file) throws IOException {
        long numel = 1;
        for (long s : exampleShape) {
            numel = Math.multiplyExact(numel, s);
        }
        Path features = Files.createTempFile(file.getParent(), "features-", ".tmp");
        Path labels = Files.createTempFile(file.getParent(), "labels-", ".tmp");
        try {
            long n = 0;
            try (DataOutputStream f = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(features), 1 << 16));
                    DataOutputStream l = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(labels), 1 << 16))) {
                ByteBuffer buf = ByteBuffer.allocate(Math.toIntExact(numel * Float.BYTES)).order(ByteOrder.LITTLE_ENDIAN);
                while (rows.hasNext()) {
                    LabeledExample row = rows.next();
                    if (row.features().length != numel) {
                        throw new IllegalArgumentException("row " + n + " of this partition has " + row.features().length
                                + " features, but the example shape " + Arrays.toString(exampleShape) + " needs " + numel
                                + ": give runOnPartitions the shape of one example (e.g. {1, 28, 28} for 784 pixels)");
                    }
                    buf.clear();
                    buf.asFloatBuffer().put(row.features());
                    f.write(buf.array());
                    l.writeLong(Long.reverseBytes(row.label())); // little-endian
                    n++;
                }
            }
            long featureBytes = Math.multiplyExact(n, numel * Float.BYTES);
            byte[] header = header(n, exampleShape, featureBytes);
            try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16)) {
                out.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(header.length).array());
                out.write(header);
                try (InputStream in = Files.newInputStream(features)) {
                    in.transferTo(out);
                }
                try (InputStream in = Files.newInputStream(labels)) {
                    in.transferTo(out);
                }
            }
            return n;
        } finally {
            Files.deleteIfExists(features);
            Files.deleteIfExists(labels);
        }
    }

    /** The JSON header, padded with spaces so that the data starts at a multiple of 8 bytes (as safetensors does). */
    static byte[] header(long n, long[] exampleShape, long featureBytes) {
        StringJoiner shape = new StringJoiner(",", "[", "]");
        shape.add(Long.toString(n));
        for (long s : exampleShape) {
            shape.add(Long.toString(s));
        }
        String json = "{\"" + FEATURES + "\":{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":[0," + featureBytes
                + "]},\"" + LABELS + "\":{\"dtype\":\"I64\",\"shape\":[" + n + "],\"data_offsets\":[" + featureBytes + ","
                + Math.addExact(featureBytes, n * Long.BYTES) + "]}}";
        StringBuilder padded = new StringBuilder(json);
        while ((8 + padded.length()) % 8 != 0) {
            padded.append(' ');
        }
        return padded.toString().getBytes(StandardCharsets.UTF_8);
    }
}
