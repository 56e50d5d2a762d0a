package org.ddp4j.nn;

import org.ddp4j.nn.functional.Conv2dFunction;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * A 2-D convolution layer with a square kernel: PyTorch's {@code torch.nn.Conv2d} (dilation 1,
 * groups 1, zero padding). Parameters: {@code weight} float32 [out, in, k, k] and, unless disabled,
 * {@code bias} float32 [out], initialised as PyTorch does:
 * {@code kaiming_uniform_(weight, a=sqrt(5))} and bias uniform in ±1/sqrt(fan_in) with
 * fan_in = in * k * k. Input [N, in, H, W] gives output [N, out, P, Q] with
 * P = floor((H + 2 padding - k) / stride) + 1, likewise Q.
 */
public class Conv2d extends Module {
    private final int inChannels;
    private final int outChannels;
    private final int kernelSize;
    private final int stride;
    private final int padding;
    private final Tensor weight;
    private final Tensor bias;

    /**
     * {@code torch.nn.Conv2d}'s keyword arguments after kernel_size, with its defaults (stride 1,
     * padding 0, bias true), plus the generator that initialises the parameters (default
     * {@link Generator#defaultGenerator()}); each wither returns a changed copy. Example:
     * {@code new Conv2d(1, 16, 5, Conv2d.Options.defaults().padding(2))}.
     */
    public record Options(int stride, int padding, boolean bias, Generator generator) {
        /** PyTorch's defaults, initialised from the default generator. */
        public static Options defaults() {
            return new Options(1, 0, true, Generator.defaultGenerator());
        }

        /** Stride in both dimensions, {@code > 0}. */
        public Options stride(int value) {
            return new Options(value, padding, bias, generator);
        }

        /** Zero padding on each side, {@code >= 0}. */
        public Options padding(int value) {
            return new Options(stride, value, bias, generator);
        }

        /** Whether to add a learnable bias. */
        public Options bias(boolean value) {
            return new Options(stride, padding, value, generator);
        }

        /** The source of the initial values. */
        public Options generator(Generator value) {
            return new Options(stride, padding, bias, value);
        }
    }

    /**
     * Mirrors {@code torch.nn.Conv2d(in_channels, out_channels, kernel_size, **options)}.
     *
     * @throws IllegalArgumentException as the full constructor
     */
    public Conv2d(int inChannels, int outChannels, int kernelSize, Options options) {
        this(inChannels, outChannels, kernelSize, options.stride(), options.padding(), options.bias(), options.generator());
    }

    /** Stride 1, no padding, with bias, default generator. */
    public Conv2d(int inChannels, int outChannels, int kernelSize) {
        this(inChannels, outChannels, kernelSize, 1, 0);
    }

    /** With bias, initialised from {@link Generator#defaultGenerator()}. */
    public Conv2d(int inChannels, int outChannels, int kernelSize, int stride, int padding) {
        this(inChannels, outChannels, kernelSize, stride, padding, true);
    }

    /** Initialised from {@link Generator#defaultGenerator()}; {@code bias=false} leaves out the bias. */
    public Conv2d(int inChannels, int outChannels, int kernelSize, int stride, int padding, boolean bias) {
        this(inChannels, outChannels, kernelSize, stride, padding, bias, Generator.defaultGenerator());
    }

    /**
     * The full constructor.
     *
     * @param inChannels channels of the input (C)
     * @param outChannels channels of the output (K)
     * @param kernelSize height and width of the kernel
     * @param stride stride in both dimensions
     * @param padding zero padding on each side, in both dimensions
     * @param bias whether to add a learnable bias
     * @param generator the source of the initial values (same seed, same parameters)
     * @throws IllegalArgumentException if a channel count or the kernel size is not positive, the
     *     stride is not positive or the padding is negative
     */
    public Conv2d(int inChannels, int outChannels, int kernelSize, int stride, int padding, boolean bias,
            Generator generator) {
        if (inChannels <= 0 || outChannels <= 0 || kernelSize <= 0 || stride <= 0 || padding < 0) {
            throw new IllegalArgumentException("Conv2d(in=" + inChannels + ", out=" + outChannels + ", kernelSize="
                    + kernelSize + ", stride=" + stride + ", padding=" + padding
                    + "): channels, kernel size and stride must be positive and padding non-negative");
        }
        this.inChannels = inChannels;
        this.outChannels = outChannels;
        this.kernelSize = kernelSize;
        this.stride = stride;
        this.padding = padding;
        this.weight = registerParameter("weight",
                Init.kaimingUniform(Tensor.zeros(outChannels, inChannels, kernelSize, kernelSize), Math.sqrt(5), generator));
        if (bias) {
            float bound = (float) (1 / Math.sqrt(Init.fanIn(weight)));
            this.bias = registerParameter("bias", Init.uniform(Tensor.zeros(outChannels), -bound, bound, generator));
        } else {
            this.bias = null;
        }
    }

    /**
     * Convolves input [N, in, H, W] (float32) into [N, out, P, Q].
     *
     * @throws IllegalArgumentException if the input is not 4-D float32, has a channel count other than
     *     {@code in}, or is smaller than the kernel after padding
     */
    @Override
    public Tensor forward(Tensor input) {
        return Conv2dFunction.apply(input, weight, bias, stride, padding);
    }

    /** The weight parameter [out, in, k, k]. */
    public Tensor weight() {
        return weight;
    }

    /** The bias parameter [out], or null when built without bias. */
    public Tensor bias() {
        return bias;
    }

    /** Input channel count. */
    public int inChannels() {
        return inChannels;
    }

    /** Output channel count. */
    public int outChannels() {
        return outChannels;
    }

    /** Kernel height and width. */
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

    /** PyTorch's extra_repr, printed inside {@code Conv2d(1, 16, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))}. */
    @Override
    protected String extraRepr() {
        return inChannels + ", " + outChannels + ", kernel_size=(" + kernelSize + ", " + kernelSize
                + "), stride=(" + stride + ", " + stride + ")"
                + (padding != 0 ? ", padding=(" + padding + ", " + padding + ")" : "")
                + (bias == null ? ", bias=False" : "");
    }
}
