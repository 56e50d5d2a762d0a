package org.ddp4j.vision.transforms;

import java.util.Objects;

/**
 * One example's image for a {@link Transform}: float32 values [channels, height, width] (row-major,
 * as a [C, H, W] tensor) in a Java array of exactly that many elements.
 */
public record Image(float[] data, int channels, int height, int width) {
    /**
     * @throws IllegalArgumentException if a dimension is not positive or data's length is not C × H × W
     */
    public Image {
        Objects.requireNonNull(data, "data");
        if (channels < 1 || height < 1 || width < 1) {
            throw new IllegalArgumentException("Image: channels, height and width must be positive, got [" + channels
                    + ", " + height + ", " + width + "]");
        }
        if ((long) channels * height * width != data.length) {
            throw new IllegalArgumentException("Image: [" + channels + ", " + height + ", " + width + "] holds "
                    + (long) channels * height * width + " values, but the array has " + data.length);
        }
    }

    /** The shape [C, H, W]. */
    public long[] shape() {
        return new long[] {channels, height, width};
    }

    /** The value at (c, h, w). */
    public float get(int c, int h, int w) {
        return data[(c * height + h) * width + w];
    }
}
