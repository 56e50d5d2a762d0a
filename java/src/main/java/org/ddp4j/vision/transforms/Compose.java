package org.ddp4j.vision.transforms;

import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;
import org.ddp4j.tensor.Generator;

/** Applies transforms one after the other, drawing from one generator. Mirrors {@code torchvision.transforms.Compose}. */
public final class Compose implements Transform {
    private final List<Transform> transforms;

    /** @throws NullPointerException if a transform is null */
    public Compose(Transform... transforms) {
        this.transforms = List.of(transforms);
    }

    @Override
    public Image apply(Image image, Generator random) {
        Image out = image;
        for (Transform t : transforms) {
            out = Objects.requireNonNull(t.apply(out, random), () -> t + " returned no image");
        }
        return out;
    }

    @Override
    public long[] outputShape(long[] inputShape) {
        long[] shape = inputShape;
        for (Transform t : transforms) {
            shape = t.outputShape(shape);
        }
        return shape;
    }

    @Override
    public String toString() {
        return "Compose(\n" + transforms.stream().map(t -> "    " + t).collect(Collectors.joining("\n")) + "\n)";
    }
}
