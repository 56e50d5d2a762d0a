package org.ddp4j.nn;

import org.ddp4j.nn.functional.AdaptiveAvgPool2dFunction;
import org.ddp4j.tensor.Tensor;

/**
 * Adaptive 2-D average pooling to a fixed output size: PyTorch's {@code torch.nn.AdaptiveAvgPool2d}.
 * Input [N, C, H, W] of any H, W ≥ 1 gives [N, C, outH, outW]; output row p averages input rows
 * [floor(p·H/outH), ceil((p+1)·H/outH)), likewise columns. {@code new AdaptiveAvgPool2d(1)} is
 * the global average pool of torchvision's ResNet. No parameters.
 */
public class AdaptiveAvgPool2d extends Module {
    private final int outH;
    private final int outW;
    /** Whether the size was given as one number (PyTorch then prints it as one). */
    private final boolean square;

    /**
     * A square output, {@code outputSize × outputSize}.
     *
     * @throws IllegalArgumentException if outputSize is not positive
     */
    public AdaptiveAvgPool2d(int outputSize) {
        this(outputSize, outputSize, true);
    }

    /**
     * An {@code outH × outW} output (PyTorch's {@code output_size=(outH, outW)}).
     *
     * @throws IllegalArgumentException if a size is not positive
     */
    public AdaptiveAvgPool2d(int outH, int outW) {
        this(outH, outW, false);
    }

    private AdaptiveAvgPool2d(int outH, int outW, boolean square) {
        if (outH <= 0 || outW <= 0) {
            throw new IllegalArgumentException("AdaptiveAvgPool2d(" + outH + ", " + outW
                    + "): the output size must be positive");
        }
        this.outH = outH;
        this.outW = outW;
        this.square = square;
    }

    /**
     * Pools input [N, C, H, W] (float32).
     *
     * @throws IllegalArgumentException if the input is not 4-D float32 with non-empty planes
     */
    @Override
    public Tensor forward(Tensor input) {
        return AdaptiveAvgPool2dFunction.apply(input, outH, outW);
    }

    /** Output height. */
    public int outputHeight() {
        return outH;
    }

    /** Output width. */
    public int outputWidth() {
        return outW;
    }

    /** PyTorch's extra_repr: "output_size=1" for {@code AdaptiveAvgPool2d(1)}, "output_size=(2, 3)" for a pair. */
    @Override
    protected String extraRepr() {
        return "output_size=" + (square ? Integer.toString(outH) : "(" + outH + ", " + outW + ")");
    }
}
