package org.ddp4j.nn;

import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/** Parameter initialisation, as {@code torch.nn.init}. Each fills a float32 CPU tensor in place. */
public final class Init {
    private Init() {}

    /**
     * Fills t with values uniform in [low, high). Mirrors {@code torch.nn.init.uniform_}.
     *
     * @throws IllegalArgumentException if t is not float32
     */
    public static Tensor uniform(Tensor t, float low, float high, Generator generator) {
        try (var scope = Tensors.scope()) {
            t.copyFrom(Tensor.of(generator.uniform(Math.toIntExact(t.numel()), low, high), t.shape()));
        }
        return t;
    }

    /**
     * PyTorch's default weight initialisation for Linear and Conv2d:
     * {@code kaiming_uniform_(w, a=sqrt(5))}, i.e. uniform in ±sqrt(6 / ((1 + a²) fan_in)) = ±1/sqrt(fan_in).
     * fan_in = size(1) × the product of the remaining sizes.
     */
    public static Tensor kaimingUniform(Tensor weight, double a, Generator generator) {
        double gain = Math.sqrt(2.0 / (1 + a * a));
        double bound = gain * Math.sqrt(3.0 / fanIn(weight));
        return uniform(weight, (float) -bound, (float) bound, generator);
    }

    /**
     * Fills t with values from the normal distribution N(mean, std²). Mirrors {@code torch.nn.init.normal_}.
     *
     * @throws IllegalArgumentException if t is not float32 or std is negative
     */
    public static Tensor normal(Tensor t, double mean, double std, Generator generator) {
        if (!(std >= 0)) {
            throw new IllegalArgumentException("normal: std must be non-negative, got " + std);
        }
        float[] values = generator.normal(Math.toIntExact(t.numel()));
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (mean + std * values[i]);
        }
        try (var scope = Tensors.scope()) {
            t.copyFrom(Tensor.of(values, t.shape()));
        }
        return t;
    }

    /** Which fan {@link #kaimingNormal} preserves: PyTorch's {@code mode='fan_in'} or {@code 'fan_out'}. */
    public enum FanMode {
        /** Preserves the variance of the activations in the forward pass. */
        FAN_IN,
        /** Preserves the variance of the gradients in the backward pass (torchvision's choice for convolutions). */
        FAN_OUT
    }

    /**
     * Fills weight with values from N(0, std²), std = gain / sqrt(fan), gain =
     * {@link #calculateGain calculateGain(nonlinearity, a)}, fan the weight's fan_in or fan_out.
     * Mirrors {@code torch.nn.init.kaiming_normal_(weight, a, mode, nonlinearity)}; torchvision's
     * ResNets call it with {@code mode='fan_out', nonlinearity='relu'} (std = sqrt(2 / fan_out)).
     *
     * @param a the negative slope of leaky_relu (ignored for the other nonlinearities)
     * @throws IllegalArgumentException if weight has fewer than 2 dimensions or is not float32, or
     *     the nonlinearity is unknown
     */
    public static Tensor kaimingNormal(Tensor weight, double a, FanMode mode, String nonlinearity, Generator generator) {
        long fan = mode == FanMode.FAN_IN ? fanIn(weight) : fanOut(weight);
        double std = calculateGain(nonlinearity, a) / Math.sqrt(fan);
        return normal(weight, 0, std, generator);
    }

    /**
     * The gain PyTorch recommends for a nonlinearity: 1 for linear, conv1d/2d/3d (and their
     * transposes) and sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + param²)) for
     * leaky_relu, 3/4 for selu. Mirrors {@code torch.nn.init.calculate_gain(nonlinearity, param)}.
     *
     * @param param leaky_relu's negative slope (PyTorch's default 0.01 is not applied: pass it)
     * @throws IllegalArgumentException naming the known nonlinearities when nonlinearity is another
     */
    public static double calculateGain(String nonlinearity, double param) {
        switch (nonlinearity) {
            case "linear": case "conv1d": case "conv2d": case "conv3d":
            case "conv_transpose1d": case "conv_transpose2d": case "conv_transpose3d": case "sigmoid":
                return 1;
            case "tanh":
                return 5.0 / 3;
            case "relu":
                return Math.sqrt(2);
            case "leaky_relu":
                return Math.sqrt(2 / (1 + param * param));
            case "selu":
                return 3.0 / 4;
            default:
                throw new IllegalArgumentException("unsupported nonlinearity '" + nonlinearity + "': use linear, conv1d,"
                        + " conv2d, conv3d, conv_transpose1d/2d/3d, sigmoid, tanh, relu, leaky_relu or selu");
        }
    }

    /** fan_out of a weight: output features × receptive field size. Mirrors {@code _calculate_fan_in_and_fan_out}. */
    public static long fanOut(Tensor weight) {
        if (weight.dim() < 2) {
            throw new IllegalArgumentException("fan out needs a weight with at least 2 dimensions, got " + weight.describe());
        }
        long receptive = 1;
        for (int d = 2; d < weight.dim(); d++) {
            receptive *= weight.size(d);
        }
        return weight.size(0) * receptive;
    }

    /** fan_in of a weight: input features × receptive field size. Mirrors {@code _calculate_fan_in_and_fan_out}. */
    public static long fanIn(Tensor weight) {
        if (weight.dim() < 2) {
            throw new IllegalArgumentException("fan in needs a weight with at least 2 dimensions, got " + weight.describe());
        }
        long receptive = 1;
        for (int d = 2; d < weight.dim(); d++) {
            receptive *= weight.size(d);
        }
        return weight.size(1) * receptive;
    }
}
