package org.ddp4j.data;

import org.ddp4j.tensor.Generator;

/** Visits 0..n-1 in a fresh random order each epoch. Mirrors {@code torch.utils.data.RandomSampler}. */
public final class RandomSampler implements Sampler {
    private final int size;
    private final Generator generator;

    public RandomSampler(int size, Generator generator) {
        this.size = size;
        this.generator = generator;
    }

    @Override
    public int[] indices() {
        return generator.permutation(size);
    }

    @Override
    public int size() {
        return size;
    }
}
