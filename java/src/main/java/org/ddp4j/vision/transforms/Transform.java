package org.ddp4j.vision.transforms;

import org.ddp4j.tensor.Generator;

/**
 * A transform of one example's image, as torchvision's {@code transforms}: applied to each example
 * as it is loaded (see {@link TransformedDataset}). A random transform takes every random choice
 * from the generator it is given (torchvision uses torch's global generator instead), so the same
 * generator state gives the same output on any thread.
 */
public interface Transform {
    /**
     * The transformed image: a new one, or {@code image} changed in place.
     *
     * @param random the source of this example's random choices (unused by deterministic transforms)
     */
    Image apply(Image image, Generator random);

    /**
     * The shape [C, H, W] this transform gives for an input of shape [C, H, W] (the same, unless it
     * crops or resizes).
     *
     * @throws IllegalArgumentException if the transform cannot apply to that shape (e.g. a crop larger than it)
     */
    default long[] outputShape(long[] inputShape) {
        return inputShape.clone();
    }
}
