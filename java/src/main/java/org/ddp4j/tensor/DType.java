package org.ddp4j.tensor;

/** Element type of a tensor. Ordinals match the native {@code ddp4j::DType}. Mirrors {@code torch.dtype}. */
public enum DType {
    /** 32-bit IEEE float ({@code torch.float32}): data, parameters, gradients. */
    FLOAT32(4),
    /** 64-bit signed integer ({@code torch.int64}): class labels, indices. */
    INT64(8);

    private final int bytes;

    DType(int bytes) {
        this.bytes = bytes;
    }

    /** Bytes per element. */
    public int bytes() {
        return bytes;
    }
}
