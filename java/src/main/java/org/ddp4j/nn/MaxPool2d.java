package org.ddp4j.nn;

import org.ddp4j.nn.functional.MaxPool2dFunction;
import org.ddp4j.tensor.Tensor;

/**
 * 2-D max pooling with a square window: PyTorch's {@code torch.nn.MaxPool2d} (dilation 1,
 * {@code ceil_mode=False}). Input [N, C, H, W] gives [N, C, P, Q] with
 * P = floor((H + 2 padding - kernel) / stride) + 1, likewise Q; padded positions count as -infinity.
 * No parameters.
 */
public class MaxPool2d extends Module {
    private final int kernelSize;
    private final int stride;
    private final int padding;

    /** Stride equal to the kernel size, no padding (PyTorch's defaults). */
    public MaxPool2d(int kernelSize) {
        this(kernelSize, kernelSize, 0);
    }

    /**
     * A pool with the given window, stride and padding.
     *
     * @throws IllegalArgumentException if kernelSize or stride is not positive, or padding is
     *     negative or more than half the kernel size
     */
    public MaxPool2d(int kernelSize, int stride, int padding) {
        if (kernelSize <= 0 || stride <= 0 || padding < 0 || padding > kernelSize / 2) {
            throw new IllegalArgumentException("MaxPool2d(kernelSize=" + kernelSize + ", stride=" + stride + ", padding="
                    + padding + "): kernel size and stride must be positive, padding between 0 and half the kernel size");
        }
        this.kernelSize = kernelSize;
        this.stride = stride;
        this.padding = padding;
    }

    /**
     * Pools input [N, C, H, W] (float32).
     *
     * @throws IllegalArgumentException if the input is not 4-D float32 or is smaller than the window after padding
     */
    @Override
    public Tensor forward(Tensor input) {
        return MaxPool2dFunction.apply(input, kernelSize, stride, padding);
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

    /** PyTorch's extra_repr, printed inside {@code MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)}. */
    @Override
    protected String extraRepr() {
        return "kernel_size=" + kernelSize + ", stride=" + stride + ", padding=" + padding + ", dilation=1, ceil_mode=False";
    }
}
