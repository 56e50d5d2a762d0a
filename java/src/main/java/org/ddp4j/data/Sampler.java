package org.ddp4j.data;

/** The order in which a {@link DataLoader} visits dataset indices. Mirrors {@code torch.utils.data.Sampler}. */
public interface Sampler {
    /** The indices for the current epoch, in visiting order. */
    int[] indices();

    /** Number of indices per epoch. */
    int size();
}
