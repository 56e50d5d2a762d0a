package org.ddp4j.nn;

import org.ddp4j.nn.functional.AvgPool2dFunction;
import org.ddp4j.tensor.Tensor;

/**
 * 2-D average pooling with a square window: PyTorch's {@code torch.nn.AvgPool2d}. Input
 * [N, C, H, W] gives [N, C, P, Q] with P = floor((H + 2 padding - kernel) / stride) + 1 (ceil
 * instead of floor with {@code ceilMode}, dropping a last window that would start past the input
 * and its left padding), likewise Q. Padding is zeros; whether it counts in the divisor is
 * {@code countIncludePad}; {@code divisorOverride} replaces the divisor. No parameters.
 */
public class AvgPool2d extends Module {
    private final int kernelSize;
    private final int stride;
    private final int padding;
    private final boolean ceilMode;
    private final boolean countIncludePad;
    private final Integer divisorOverride;

    /** Stride equal to the kernel size, no padding (PyTorch's defaults). */
    public AvgPool2d(int kernelSize) {
        this(kernelSize, kernelSize, 0);
    }

    /**
     * A pool with the given window, stride and padding; floor mode, padding counted in the divisor.
     *
     * @throws IllegalArgumentException if kernelSize or stride is not positive, or padding is
     *     negative or more than half the kernel size
     */
    public AvgPool2d(int kernelSize, int stride, int padding) {
        this(kernelSize, stride, padding, false, true, null);
    }

    /**
     * A pool with every option of {@code torch.nn.AvgPool2d(kernel_size, stride, padding, ceil_mode,
     * count_include_pad, divisor_override)}.
     *
     * @param ceilMode round the output size up instead of down
     * @param countIncludePad whether padded positions count in the divisor
     * @param divisorOverride the divisor of every window (positive), or null for the window's size
     * @throws IllegalArgumentException if kernelSize or stride is not positive, padding is negative
     *     or more than half the kernel size, or divisorOverride is not positive
     */
    public AvgPool2d(int kernelSize, int stride, int padding, boolean ceilMode, boolean countIncludePad,
            Integer divisorOverride) {
        if (kernelSize <= 0 || stride <= 0 || padding < 0 || padding > kernelSize / 2
                || (divisorOverride != null && divisorOverride <= 0)) {
            throw new IllegalArgumentException("AvgPool2d(kernelSize=" + kernelSize + ", stride=" + stride + ", padding="
                    + padding + ", divisorOverride=" + divisorOverride + "): kernel size and stride must be positive, "
                    + "padding between 0 and half the kernel size, divisorOverride positive or null");
        }
        this.kernelSize = kernelSize;
        this.stride = stride;
        this.padding = padding;
        this.ceilMode = ceilMode;
        this.countIncludePad = countIncludePad;
        this.divisorOverride = divisorOverride;
    }

    /**
     * Pools input [N, C, H, W] (float32).
     *
     * @throws IllegalArgumentException if the input is not 4-D float32 or is too small for one window after padding
     */
    @Override
    public Tensor forward(Tensor input) {
        return AvgPool2dFunction.apply(input, kernelSize, kernelSize, stride, stride, padding, padding, ceilMode,
                countIncludePad, divisorOverride);
    }

    /** Window height and width. */
    public int kernelSize() {
        return kernelSize;
    }

    /** Stride in both dimensions. */
    public int stride() {
        return stride;
    }

    /** Zero padding on each side, in both dimensions. */
    public int padding() {
        return padding;
    }

    /** Whether the output size is rounded up. */
    public boolean ceilMode() {
        return ceilMode;
    }

    /** Whether padded positions count in the divisor. */
    public boolean countIncludePad() {
        return countIncludePad;
    }

    /** The fixed divisor, or null when each window's size divides. */
    public Integer divisorOverride() {
        return divisorOverride;
    }

    /** PyTorch's extra_repr, e.g. {@code AvgPool2d(kernel_size=3, stride=2, padding=1)} (the other options are not printed). */
    @Override
    protected String extraRepr() {
        return "kernel_size=" + kernelSize + ", stride=" + stride + ", padding=" + padding;
    }
}
