package org.ddp4j.vision.transforms;

import org.ddp4j.tensor.Generator;

/** Mirrors the image left to right with probability p. Mirrors {@code torchvision.transforms.RandomHorizontalFlip(p)}. */
public final class RandomHorizontalFlip implements Transform {
    private final double p;

    /** p = 0.5. */
    public RandomHorizontalFlip() {
        this(0.5);
    }

    /** @throws IllegalArgumentException if p is not in [0, 1] */
    public RandomHorizontalFlip(double p) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("RandomHorizontalFlip: p must be a probability in [0, 1], got " + p);
        }
        this.p = p;
    }

    @Override
    public Image apply(Image image, Generator random) {
        return random.uniform(0f, 1f) < p ? flip(image) : image;
    }

    /** The image mirrored left to right, in place ({@code torchvision.transforms.functional.hflip}). */
    static Image flip(Image image) {
        float[] x = image.data();
        int w = image.width();
        for (int row = 0; row < image.channels() * image.height(); row++) {
            for (int a = row * w, b = a + w - 1; a < b; a++, b--) {
                float t = x[a];
                x[a] = x[b];
                x[b] = t;
            }
        }
        return image;
    }

    @Override
    public String toString() {
        return "RandomHorizontalFlip(p=" + p + ")";
    }
}
