package org.ddp4j.vision.transforms;

import org.ddp4j.tensor.Generator;

/**
 * Pads the image with zeros on every side, then cuts a height × width window at a uniformly random
 * position (every position of the padded image equally likely). Mirrors
 * {@code torchvision.transforms.RandomCrop(size, padding)} with {@code padding_mode="constant", fill=0}
 * (CIFAR's {@code RandomCrop(32, padding=4)}).
 */
public final class RandomCrop implements Transform {
    private final int height;
    private final int width;
    private final int padding;

    /** A square crop: {@code RandomCrop(size, padding)}. */
    public RandomCrop(int size, int padding) {
        this(size, size, padding);
    }

    /** @throws IllegalArgumentException if a size is not positive or padding is negative */
    public RandomCrop(int height, int width, int padding) {
        if (height < 1 || width < 1 || padding < 0) {
            throw new IllegalArgumentException("RandomCrop: the size must be positive and the padding non-negative, got"
                    + " size (" + height + ", " + width + ") and padding " + padding);
        }
        this.height = height;
        this.width = width;
        this.padding = padding;
    }

    @Override
    public Image apply(Image image, Generator random) {
        checkFits(image.height(), image.width());
        int top = random.nextInt(image.height() + 2 * padding - height + 1);
        int left = random.nextInt(image.width() + 2 * padding - width + 1);
        return crop(image, top, left);
    }

    /** The window whose top-left corner is (top, left) in the padded image. */
    Image crop(Image image, int top, int left) {
        int c = image.channels();
        float[] out = new float[c * height * width];
        for (int ch = 0; ch < c; ch++) {
            for (int r = 0; r < height; r++) {
                int h = top + r - padding;
                if (h < 0 || h >= image.height()) {
                    continue; // padding: zeros
                }
                for (int q = 0; q < width; q++) {
                    int w = left + q - padding;
                    if (w >= 0 && w < image.width()) {
                        out[(ch * height + r) * width + q] = image.get(ch, h, w);
                    }
                }
            }
        }
        return new Image(out, c, height, width);
    }

    @Override
    public long[] outputShape(long[] inputShape) {
        checkFits(inputShape[1], inputShape[2]);
        return new long[] {inputShape[0], height, width};
    }

    private void checkFits(long h, long w) {
        if (h + 2L * padding < height || w + 2L * padding < width) {
            throw new IllegalArgumentException("RandomCrop: required crop size (" + height + ", " + width + ") is larger"
                    + " than the padded input image size (" + (h + 2L * padding) + ", " + (w + 2L * padding) + "); crop"
                    + " smaller or pad more");
        }
    }

    @Override
    public String toString() {
        return "RandomCrop(size=(" + height + ", " + width + "), padding=" + padding + ")";
    }
}
