package org.ddp4j.data;

/**
 * The order in which a DataLoader visits dataset indices. Mirrors PyTorch's
 * {@code torch.utils.data.Sampler}.
 */
public interface Sampler {
    /** The dataset indices to visit, in order, for the current epoch. */
    int[] indices();

    /** How many indices {@link #indices()} returns. Mirrors {@code Sampler.__len__}. */
    int size();
}
