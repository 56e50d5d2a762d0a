package org.ddp4j.tensor;

/**
 * Element type of a tensor. Ordinals match the native {@code ddp4j::DType}. Mirrors {@code torch.dtype};
 * {@code name().toLowerCase()} is PyTorch's name without {@code torch.}.
 */
public enum DType {
    /** 32-bit IEEE float ({@code torch.float32}): data, parameters, gradients. */
    FLOAT32(4),
    /** 64-bit signed integer ({@code torch.int64}): class labels, indices. */
    INT64(8),
    /**
     * 16-bit brain float ({@code torch.bfloat16}): float32's 8 exponent bits and range with 7 mantissa
     * bits (about 3 significant decimal digits). So far created, converted with {@link Tensor#to(DType)},
     * copied, printed and saved; ops and collectives refuse it by name (convert to FLOAT32 first).
     */
    BFLOAT16(2),
    /**
     * 16-bit IEEE half ({@code torch.float16}): 5 exponent bits (largest finite value 65504, subnormals
     * down to 2^-24) and 10 mantissa bits. Supported as far as {@link #BFLOAT16}.
     */
    FLOAT16(2),
    /**
     * Boolean ({@code torch.bool}), one byte per element holding 0 or 1: attention masks and the
     * results of comparisons ({@link Tensor#eq}, {@link Tensor#lt}, ...). Made with
     * {@link Tensors#ofBooleans}, read with {@link Tensor#toBooleanArray()}; taken by
     * {@link Tensor#where}, {@link Tensor#maskedFill}, {@link Tensor#logicalNot()}, the shape ops
     * and {@link Tensor#tril}; collectives refuse to reduce it.
     */
    BOOL(1);

    private final int bytes;

    DType(int bytes) {
        this.bytes = bytes;
    }

    /** Bytes per element. Mirrors {@code torch.dtype.itemsize}. */
    public int bytes() {
        return bytes;
    }

    /** Whether this is a floating-point type. Mirrors {@code torch.dtype.is_floating_point}. */
    public boolean isFloatingPoint() {
        return this == FLOAT32 || this == BFLOAT16 || this == FLOAT16;
    }
}
