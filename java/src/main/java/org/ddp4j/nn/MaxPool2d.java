package org.ddp4j.nn;

import org.ddp4j.nn.functional.MaxPool2dFunction;
import org.ddp4j.tensor.Tensor;

/**
 * 2-D max pooling with a square window: PyTorch's {@code torch.nn.MaxPool2d} (without
 * {@code return_indices}). Input [N, C, H, W] gives [N, C, P, Q] with
 * P = floor((H + 2 padding - dilation (kernel - 1) - 1) / stride) + 1 (ceil instead of floor with
 * {@code ceilMode}, dropping a last window that would start past the input and its left padding),
 * likewise Q; padded positions count as -infinity. No parameters.
 */
public class MaxPool2d extends Module {
    private final int kernelSize;
    private final int stride;
    private final int padding;
    private final int dilation;
    private final boolean ceilMode;

    /** Stride equal to the kernel size, no padding (PyTorch's defaults). */
    public MaxPool2d(int kernelSize) {
        this(kernelSize, kernelSize, 0);
    }

    /**
     * A pool with the given window, stride and padding (dilation 1, floor mode).
     *
     * @throws IllegalArgumentException if kernelSize or stride is not positive, or padding is
     *     negative or more than half the kernel size
     */
    public MaxPool2d(int kernelSize, int stride, int padding) {
        this(kernelSize, stride, padding, 1, false);
    }

    /**
     * A pool with every option of {@code torch.nn.MaxPool2d(kernel_size, stride, padding, dilation,
     * ceil_mode=ceilMode)}.
     *
     * @param dilation spacing between the window's taps (1: a dense window)
     * @param ceilMode round the output size up instead of down
     * @throws IllegalArgumentException if kernelSize, stride or dilation is not positive, or padding
     *     is negative or more than half the kernel size
     */
    public MaxPool2d(int kernelSize, int stride, int padding, int dilation, boolean ceilMode) {
        if (kernelSize <= 0 || stride <= 0 || dilation <= 0 || padding < 0 || padding > kernelSize / 2) {
            throw new IllegalArgumentException("MaxPool2d(kernelSize=" + kernelSize + ", stride=" + stride + ", padding="
                    + padding + ", dilation=" + dilation + "): kernel size, stride and dilation must be positive, "
                    + "padding between 0 and half the kernel size");
        }
        this.kernelSize = kernelSize;
        this.stride = stride;
        this.padding = padding;
        this.dilation = dilation;
        this.ceilMode = ceilMode;
    }

    /**
     * Pools input [N, C, H, W] (float32).
     *
     * @throws IllegalArgumentException if the input is not 4-D float32 or is too small for one window after padding
     */
    @Override
    public Tensor forward(Tensor input) {
        return MaxPool2dFunction.apply(input, kernelSize, kernelSize, stride, stride, padding, padding, dilation, dilation,
                ceilMode);
    }

    /** Window height and width. */
    public int kernelSize() {
        return kernelSize;
    }

    /** Stride in both dimensions. */
    public int stride() {
        return stride;
    }

    /** Padding (-infinity) on each side, in both dimensions. */
    public int padding() {
        return padding;
    }

    /** Spacing between the window's taps, in both dimensions. */
    public int dilation() {
        return dilation;
    }

    /** Whether the output size is rounded up. */
    public boolean ceilMode() {
        return ceilMode;
    }

    /** PyTorch's extra_repr, printed inside {@code MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)}. */
    @Override
    protected String extraRepr() {
        return "kernel_size=" + kernelSize + ", stride=" + stride + ", padding=" + padding + ", dilation=" + dilation
                + ", ceil_mode=" + (ceilMode ? "True" : "False");
    }
}
