package org.ddp4j.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MnistDatasetTest {
    @TempDir
    Path dir;

    private static byte[] idx(int[] dims, byte[] data) {
        ByteBuffer b = ByteBuffer.allocate(4 + 4 * dims.length + data.length);
        b.putShort((short) 0).put((byte) 8).put((byte) dims.length);
        for (int d : dims) {
            b.putInt(d);
        }
        return b.put(data).array();
    }

    private static void write(Path p, byte[] bytes, boolean gzip) throws IOException {
        try (OutputStream out = gzip ? new GZIPOutputStream(Files.newOutputStream(p)) : Files.newOutputStream(p)) {
            out.write(bytes);
        }
    }

    private void writeSet(String prefix, boolean gzip) throws IOException {
        byte[] pixels = new byte[3 * 2 * 2];
        for (int i = 0; i < pixels.length; i++) {
            pixels[i] = (byte) (i * 20);
        }
        String ext = gzip ? ".gz" : "";
        write(dir.resolve(prefix + "-images-idx3-ubyte" + ext), idx(new int[] {3, 2, 2}, pixels), gzip);
        write(dir.resolve(prefix + "-labels-idx1-ubyte" + ext), idx(new int[] {3}, new byte[] {7, 0, (byte) 255}), gzip);
    }

    @Test
    void readsGzippedAndPlainFiles() throws IOException {
        writeSet("train", true);
        writeSet("t10k", false);
        for (boolean train : new boolean[] {true, false}) {
            MnistDataset ds = new MnistDataset(dir, train);
            assertEquals(3, ds.size());
            assertArrayEquals(new long[] {1, 2, 2}, ds.exampleShape());
            float[] x = new float[4];
            ds.copyFeatures(2, x, 0);
            assertArrayEquals(new float[] {160 / 255f, 180 / 255f, 200 / 255f, 220 / 255f}, x, 1e-7f);
            assertEquals(7, ds.label(0));
            assertEquals(255, ds.label(2));
        }
        assertEquals(2, new MnistDataset(dir, true, 2).size());
    }

    @Test
    void truncatedFileNamesPathAndSizes() throws IOException {
        writeSet("train", false);
        Path images = dir.resolve("train-images-idx3-ubyte");
        byte[] bytes = Files.readAllBytes(images);
        Files.write(images, Arrays.copyOf(bytes, bytes.length - 5));
        var e = assertThrows(UncheckedIOException.class, () -> new MnistDataset(dir, true));
        assertTrue(e.getMessage().contains(images.toString()) && e.getMessage().contains("truncated")
                && e.getMessage().contains("need 12") && e.getMessage().contains("found 7"), e.getMessage());
    }

    /** Dimensions whose product cannot fit one array (or even a long): the file and the header are named. */
    @Test
    void oversizedHeaderNamesFileAndDimensions() throws IOException {
        writeSet("train", false);
        Path images = dir.resolve("train-images-idx3-ubyte");
        // Three dimensions of 2^31 - 1 overflow a long; the first alone is already too large.
        write(images, idx(new int[] {Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE}, new byte[0]), false);
        var e = assertThrows(UncheckedIOException.class, () -> new MnistDataset(dir, true));
        assertTrue(e.getMessage().contains(images.toString())
                && e.getMessage().contains("[" + Integer.MAX_VALUE + "] (first 1 of 3 dimensions)")
                && e.getMessage().contains("corrupt header"), e.getMessage());
        write(images, idx(new int[] {60000, 1000000, 1000}, new byte[0]), false);
        e = assertThrows(UncheckedIOException.class, () -> new MnistDataset(dir, true));
        assertTrue(e.getMessage().contains("[60000, 1000000] (first 2 of 3 dimensions)"), e.getMessage());
    }

    @Test
    void corruptGzipIsReported() throws IOException {
        writeSet("train", true);
        Path labels = dir.resolve("train-labels-idx1-ubyte.gz");
        ByteArrayOutputStream half = new ByteArrayOutputStream();
        byte[] bytes = Files.readAllBytes(labels);
        half.write(bytes, 0, bytes.length / 2);
        Files.write(labels, half.toByteArray());
        var e = assertThrows(UncheckedIOException.class, () -> new MnistDataset(dir, true));
        assertTrue(e.getMessage().contains(labels.toString()) && e.getMessage().contains("gzip"), e.getMessage());
    }

    @Test
    void missingFileNamesPackageAndOption() {
        var e = assertThrows(UncheckedIOException.class, () -> new MnistDataset(dir, true));
        assertTrue(e.getMessage().contains("train-images-idx3-ubyte") && e.getMessage().contains("dataset-fashion-mnist")
                && e.getMessage().contains("--data"), e.getMessage());
    }

    @Test
    void readsDebianFashionMnist() {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        MnistDataset train = new MnistDataset(MnistDataset.DEFAULT_DIR, true);
        MnistDataset test = new MnistDataset(MnistDataset.DEFAULT_DIR, false);
        assertEquals(60000, train.size());
        assertEquals(10000, test.size());
        assertEquals(9, train.label(0)); // Fashion-MNIST's first training image is an ankle boot
        assertEquals(9, test.label(0));
    }
}
