package org.ddp4j.data;

import org.ddp4j.tensor.Tensor;

/**
 * One batch from a {@link DataLoader}: inputs (float32 [B, ...]) and labels (int64 [B], or null
 * for an unlabelled dataset); or from {@link TokenWindows}: token ids (int64 [B, T]) and the next
 * tokens (int64 [B, T]). Closing it frees both.
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
