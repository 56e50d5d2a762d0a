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
