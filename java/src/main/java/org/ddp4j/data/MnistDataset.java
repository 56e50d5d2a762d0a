package org.ddp4j.data;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;

/**
 * MNIST or Fashion-MNIST from IDX files (gzipped or not): images as float32 [1, 28, 28] scaled to
 * [0, 1] (as {@code ToTensor()}), labels as int64. Pixels stay in memory as the file's bytes (a
 * quarter of the floats' size) and are scaled as each batch is gathered. Mirrors {@code torchvision.datasets.FashionMNIST}
 * without downloading: Debian's {@code dataset-fashion-mnist} installs the files in
 * {@link #DEFAULT_DIR}.
 */
public final class MnistDataset implements Dataset {
    /** Where Debian's dataset-fashion-mnist puts the files. */
    public static final Path DEFAULT_DIR = Path.of("/usr/share/datasets/fashion-mnist");

    private final byte[] images; // unsigned pixels, row-major [size, rows, cols]
    private final long[] labels;
    private final int size;
    private final int rows;
    private final int cols;

    /**
     * Loads the training set ({@code train-*}) or the test set ({@code t10k-*}) from {@code dir}.
     *
     * @param limit use only the first {@code limit} examples (≤ 0: all)
     * @throws UncheckedIOException naming the file and the problem: missing (with the apt package
     *     and the --data option), truncated, corrupt, or images and labels of different counts
     */
    public MnistDataset(Path dir, boolean train, int limit) {
        String prefix = train ? "train" : "t10k";
        Path imageFile = find(dir, prefix + "-images-idx3-ubyte");
        Path labelFile = find(dir, prefix + "-labels-idx1-ubyte");
        try {
            IdxFile imageIdx = IdxFile.read(imageFile);
            IdxFile labelIdx = IdxFile.read(labelFile);
            if (imageIdx.dims().length != 3) {
                throw new IOException(imageFile + ": expected 3 dimensions [N, rows, cols], got " + Arrays.toString(imageIdx.dims()));
            }
            if (labelIdx.dims().length != 1 || labelIdx.dims()[0] != imageIdx.dims()[0]) {
                throw new IOException(labelFile + ": expected " + imageIdx.dims()[0] + " labels to match " + imageFile
                        + ", got dimensions " + Arrays.toString(labelIdx.dims()));
            }
            int n = imageIdx.dims()[0];
            this.size = limit > 0 ? Math.min(limit, n) : n;
            this.rows = imageIdx.dims()[1];
            this.cols = imageIdx.dims()[2];
            int pixels = rows * cols;
            byte[] raw = imageIdx.data();
            this.images = size == n ? raw : Arrays.copyOf(raw, size * pixels);
            this.labels = new long[size];
            byte[] rawLabels = labelIdx.data();
            for (int i = 0; i < size; i++) {
                labels[i] = rawLabels[i] & 0xff;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
    }

    /** The whole training or test set. */
    public MnistDataset(Path dir, boolean train) {
        this(dir, train, 0);
    }

    private static Path find(Path dir, String name) {
        for (String candidate : new String[] {name + ".gz", name}) {
            Path p = dir.resolve(candidate);
            if (Files.exists(p)) {
                return p;
            }
        }
        throw new UncheckedIOException(new IOException(dir.resolve(name + ".gz") + " (or without .gz) not found: "
                + "install Fashion-MNIST with `apt-get install -y dataset-fashion-mnist` (it goes to " + DEFAULT_DIR
                + "), or point --data at a folder holding the MNIST-format IDX files"));
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public long[] exampleShape() {
        return new long[] {1, rows, cols};
    }

    @Override
    public void copyFeatures(int index, float[] dst, int offset) {
        Objects.checkIndex(index, size);
        int pixels = rows * cols;
        Objects.checkFromIndexSize(offset, pixels, dst.length);
        for (int i = 0, src = index * pixels; i < pixels; i++) {
            dst[offset + i] = (images[src + i] & 0xff) / 255f;
        }
    }

    @Override
    public boolean hasLabels() {
        return true;
    }

    @Override
    public long label(int index) {
        return labels[index];
    }
}
