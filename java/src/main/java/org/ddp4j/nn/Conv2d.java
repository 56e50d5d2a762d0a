package org.ddp4j.nn;

import org.ddp4j.nn.functional.Conv2dFunction;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * A 2-D convolution layer with a square kernel: PyTorch's {@code torch.nn.Conv2d} (zero padding,
 * any stride, dilation and groups). Parameters: {@code weight} float32 [out, in / groups, k, k]
 * and, unless disabled, {@code bias} float32 [out], initialised as PyTorch does:
 * {@code kaiming_uniform_(weight, a=sqrt(5))} and bias uniform in ±1/sqrt(fan_in) with
 * fan_in = (in / groups) * k * k. Input [N, in, H, W] gives output [N, out, P, Q] with
 * P = floor((H + 2 padding - dilation (k - 1) - 1) / stride) + 1, likewise Q.
 */
public class Conv2d extends Module {
    private final int inChannels;
    private final int outChannels;
    private final int kernelSize;
    private final int stride;
    private final int padding;
    private final int dilation;
    private final int groups;
    private final Tensor weight;
    private final Tensor bias;

    /**
     * {@code torch.nn.Conv2d}'s keyword arguments after kernel_size, with its defaults (stride 1,
     * padding 0, dilation 1, groups 1, bias true), plus the generator that initialises the
     * parameters (default {@link Generator#defaultGenerator()}); each wither returns a changed
     * copy. Example: {@code new Conv2d(64, 64, 3, Conv2d.Options.defaults().padding(1).groups(32))}.
     */
    public record Options(int stride, int padding, int dilation, int groups, boolean bias, Generator generator) {
        /** PyTorch's defaults, initialised from the default generator. */
        public static Options defaults() {
            return new Options(1, 0, 1, 1, true, Generator.defaultGenerator());
        }

        /** Stride in both dimensions, {@code > 0}. */
        public Options stride(int value) {
            return new Options(value, padding, dilation, groups, bias, generator);
        }

        /** Zero padding on each side, {@code >= 0}. */
        public Options padding(int value) {
            return new Options(stride, value, dilation, groups, bias, generator);
        }

        /** Spacing between kernel taps in both dimensions, {@code > 0} (1 = dense kernel). */
        public Options dilation(int value) {
            return new Options(stride, padding, value, groups, bias, generator);
        }

        /** Channel groups, {@code > 0}, dividing in and out channels ({@code groups == in}: depthwise). */
        public Options groups(int value) {
            return new Options(stride, padding, dilation, value, bias, generator);
        }

        /** Whether to add a learnable bias. */
        public Options bias(boolean value) {
            return new Options(stride, padding, dilation, groups, value, generator);
        }

        /** The source of the initial values. */
        public Options generator(Generator value) {
            return new Options(stride, padding, dilation, groups, bias, value);
        }
    }

    /**
     * Mirrors {@code torch.nn.Conv2d(in_channels, out_channels, kernel_size, **options)}.
     *
     * @throws IllegalArgumentException if a channel count or the kernel size is not positive, the
     *     stride, dilation or groups are not positive, the padding is negative, or groups does not
     *     divide both channel counts
     */
    public Conv2d(int inChannels, int outChannels, int kernelSize, Options options) {
        validate(inChannels, outChannels, kernelSize, options);
        this.inChannels = inChannels;
        this.outChannels = outChannels;
        this.kernelSize = kernelSize;
        this.stride = options.stride();
        this.padding = options.padding();
        this.dilation = options.dilation();
        this.groups = options.groups();
        this.weight = registerParameter("weight", Init.kaimingUniform(
                Tensor.zeros(outChannels, inChannels / groups, kernelSize, kernelSize), Math.sqrt(5),
                options.generator()));
        if (options.bias()) {
            float bound = (float) (1 / Math.sqrt(Init.fanIn(weight)));
            this.bias = registerParameter("bias",
                    Init.uniform(Tensor.zeros(outChannels), -bound, bound, options.generator()));
        } else {
            this.bias = null;
        }
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
     * Dilation 1, groups 1.
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
        this(inChannels, outChannels, kernelSize, new Options(stride, padding, 1, 1, bias, generator));
    }

    private static void validate(int in, int out, int kernelSize, Options o) {
        String call = "Conv2d(in=" + in + ", out=" + out + ", kernelSize=" + kernelSize + ", stride=" + o.stride()
                + ", padding=" + o.padding() + ", dilation=" + o.dilation() + ", groups=" + o.groups() + "): ";
        if (in <= 0 || out <= 0 || kernelSize <= 0 || o.stride() <= 0 || o.padding() < 0 || o.dilation() <= 0) {
            throw new IllegalArgumentException(call
                    + "channels, kernel size, stride and dilation must be positive and padding non-negative");
        }
        if (o.groups() <= 0) {
            throw new IllegalArgumentException(call + "groups must be a positive integer");
        }
        if (in % o.groups() != 0) {
            throw new IllegalArgumentException(call + "in_channels must be divisible by groups");
        }
        if (out % o.groups() != 0) {
            throw new IllegalArgumentException(call + "out_channels must be divisible by groups");
        }
    }

    /**
     * Convolves input [N, in, H, W] (float32) into [N, out, P, Q].
     *
     * @throws IllegalArgumentException if the input is not 4-D float32, has a channel count other than
     *     {@code in}, or is smaller than the dilated kernel after padding
     */
    @Override
    public Tensor forward(Tensor input) {
        return Conv2dFunction.apply(input, weight, bias, stride, stride, padding, padding, dilation, dilation, groups);
    }

    /** The weight parameter [out, in / groups, k, k]. */
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

    /** Spacing between kernel taps in both dimensions (1 = dense). */
    public int dilation() {
        return dilation;
    }

    /** Number of channel groups (1 = every output channel sees every input channel). */
    public int groups() {
        return groups;
    }

    /**
     * PyTorch's extra_repr, printed inside e.g.
     * {@code Conv2d(64, 64, kernel_size=(3, 3), stride=(1, 1), padding=(2, 2), dilation=(2, 2), groups=64, bias=False)}:
     * padding, dilation and groups only when they differ from the defaults.
     */
    @Override
    protected String extraRepr() {
        return inChannels + ", " + outChannels + ", kernel_size=(" + kernelSize + ", " + kernelSize
                + "), stride=(" + stride + ", " + stride + ")"
                + (padding != 0 ? ", padding=(" + padding + ", " + padding + ")" : "")
                + (dilation != 1 ? ", dilation=(" + dilation + ", " + dilation + ")" : "")
                + (groups != 1 ? ", groups=" + groups : "")
                + (bias == null ? ", bias=False" : "");
    }
}
