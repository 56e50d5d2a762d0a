package org.ddp4j.vision.transforms;

import java.util.Arrays;
import org.ddp4j.tensor.Generator;

/**
 * {@code (x - mean[c]) / std[c]} per channel, in float32. Mirrors {@code torchvision.transforms.Normalize(mean, std)}.
 */
public final class Normalize implements Transform {
    private final float[] mean;
    private final float[] std;

    /**
     * @param mean per channel (one value applies to every channel)
     * @param std per channel, non-zero (one value applies to every channel)
     * @throws IllegalArgumentException if the lengths differ or a std is 0
     */
    public Normalize(double[] mean, double[] std) {
        if (mean.length == 0 || mean.length != std.length) {
            throw new IllegalArgumentException("Normalize: mean and std need one value per channel each, got "
                    + mean.length + " means and " + std.length + " stds");
        }
        this.mean = new float[mean.length];
        this.std = new float[std.length];
        for (int c = 0; c < mean.length; c++) {
            if (std[c] == 0) {
                throw new IllegalArgumentException("Normalize: std evaluated to zero for channel " + c
                        + ", leading to division by zero");
            }
            this.mean[c] = (float) mean[c];
            this.std[c] = (float) std[c];
        }
    }

    /** @throws IllegalArgumentException if the image's channels do not match mean's (and mean has more than one) */
    @Override
    public Image apply(Image image, Generator random) {
        checkChannels(image.channels());
        float[] x = image.data();
        int plane = image.height() * image.width();
        for (int c = 0; c < image.channels(); c++) {
            float m = mean[mean.length == 1 ? 0 : c];
            float s = std[std.length == 1 ? 0 : c];
            for (int i = c * plane; i < (c + 1) * plane; i++) {
                x[i] = (x[i] - m) / s;
            }
        }
        return image;
    }

    @Override
    public long[] outputShape(long[] inputShape) {
        checkChannels(inputShape[0]);
        return inputShape.clone();
    }

    private void checkChannels(long channels) {
        if (mean.length != 1 && mean.length != channels) {
            throw new IllegalArgumentException("Normalize: " + mean.length + " means and stds for an image of " + channels
                    + " channels; give one value per channel (or one for all)");
        }
    }

    @Override
    public String toString() {
        return "Normalize(mean=" + Arrays.toString(mean) + ", std=" + Arrays.toString(std) + ")";
    }
}
