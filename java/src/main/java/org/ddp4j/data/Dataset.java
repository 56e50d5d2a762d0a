package org.ddp4j.data;

/**
 * A map-style dataset: examples addressed by index 0..size()-1, each a float32 feature tensor of
 * {@link #exampleShape()} and, for classification, an int64 label. Mirrors
 * {@code torch.utils.data.Dataset}. A {@link DataLoader} copies examples into batches with one
 * native copy per batch.
 */
public interface Dataset {
    /** Number of examples. Mirrors {@code __len__}. */
    int size();

    /** Shape of one example's features, e.g. {@code [1, 28, 28]}. */
    long[] exampleShape();

    /** Number of floats in one example (the product of {@link #exampleShape()}). */
    default int exampleNumel() {
        long n = 1;
        for (long s : exampleShape()) {
            n *= s;
        }
        return Math.toIntExact(n);
    }

    /**
     * Copies example {@code index}'s features into {@code dst} starting at {@code offset}.
     *
     * @throws IndexOutOfBoundsException if index is not in [0, size())
     */
    void copyFeatures(int index, float[] dst, int offset);

    /** Whether examples carry labels. */
    boolean hasLabels();

    /**
     * The label of example {@code index}.
     *
     * @throws IllegalStateException if the dataset has no labels
     */
    long label(int index);
}
