package org.ddp4j.data;

import org.ddp4j.tensor.Tensor;

/**
 * One batch from a {@link DataLoader}: inputs (float32 [B, ...]) and labels (int64 [B], or null
 * for an unlabelled dataset). Closing it frees both.
 */
public record Batch(Tensor inputs, Tensor labels) implements AutoCloseable {
    /** Number of examples in the batch. */
    public int size() {
        return Math.toIntExact(inputs.size(0));
    }

    @Override
    public void close() {
        inputs.close();
        if (labels != null) {
            labels.close();
        }
    }
}
