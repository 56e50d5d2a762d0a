package org.ddp4j.data;

/** Visits 0..n-1 in order. Mirrors {@code torch.utils.data.SequentialSampler}. */
public final class SequentialSampler implements Sampler {
    private final int size;

    public SequentialSampler(int size) {
        this.size = size;
    }

    @Override
    public int[] indices() {
        int[] out = new int[size];
        for (int i = 0; i < size; i++) {
            out[i] = i;
        }
        return out;
    }

    @Override
    public int size() {
        return size;
    }
}
