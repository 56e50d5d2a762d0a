package org.ddp4j.vision.transforms;

import java.util.Objects;
import org.ddp4j.data.Dataset;
import org.ddp4j.tensor.Generator;

/**
 * A dataset whose examples pass through a {@link Transform} as they are loaded: torchvision's
 * {@code dataset = FashionMNIST(..., transform=...)}. The random choices for example i in epoch e
 * come from a generator seeded with (seed, e, i): the same on every run, whichever worker thread of
 * a {@link org.ddp4j.data.DataLoader} or whichever rank loads it, and new each epoch (call
 * {@link #setEpoch(int)} with the sampler's epoch). Torchvision draws from each worker's global
 * generator instead, so its augmentations depend on the number of workers.
 *
 * <p>The base dataset's examples must have shape [C, H, W]. Thread-safe when the base dataset is.
 */
public final class TransformedDataset implements Dataset {
    private final Dataset base;
    private final Transform transform;
    private final long seed;
    private final long[] shape;
    private final int baseNumel;
    private volatile int epoch;
    /** Each loading thread's copy of a base example, reused from example to example. */
    private final ThreadLocal<float[]> scratch;

    /**
     * @param seed seeds the random choices (with the epoch and the example's index)
     * @throws IllegalArgumentException if the base examples are not [C, H, W] or the transform cannot take their shape
     */
    public TransformedDataset(Dataset base, Transform transform, long seed) {
        this.base = Objects.requireNonNull(base, "base");
        this.transform = Objects.requireNonNull(transform, "transform");
        this.seed = seed;
        long[] in = base.exampleShape();
        if (in.length != 3) {
            throw new IllegalArgumentException("TransformedDataset: transforms take images [C, H, W], but the dataset's"
                    + " examples have shape " + java.util.Arrays.toString(in));
        }
        this.shape = transform.outputShape(in);
        this.baseNumel = base.exampleNumel();
        this.scratch = ThreadLocal.withInitial(() -> new float[baseNumel]);
    }

    /** Sets the epoch whose random choices the next loads make. Mirrors {@code DistributedSampler.set_epoch}. */
    public void setEpoch(int epoch) {
        this.epoch = epoch;
    }

    @Override
    public int size() {
        return base.size();
    }

    @Override
    public long[] exampleShape() {
        return shape.clone();
    }

    /**
     * @throws IllegalStateException if the transform gave another shape than it announced
     */
    @Override
    public void copyFeatures(int index, float[] dst, int offset) {
        float[] x = scratch.get(); // the transforms may change it in place; its values are copied out below
        base.copyFeatures(index, x, 0);
        long[] in = base.exampleShape();
        Image out = transform.apply(new Image(x, (int) in[0], (int) in[1], (int) in[2]), generatorFor(index));
        if (out.channels() != shape[0] || out.height() != shape[1] || out.width() != shape[2]) {
            throw new IllegalStateException("TransformedDataset: " + transform + " gave an image of shape "
                    + java.util.Arrays.toString(out.shape()) + " where its outputShape said "
                    + java.util.Arrays.toString(shape));
        }
        System.arraycopy(out.data(), 0, dst, offset, out.data().length);
    }

    /** This epoch's generator for example index. */
    Generator generatorFor(int index) {
        // splitmix-style mixing of the three numbers, so neighbouring examples and epochs get unrelated streams
        long h = seed;
        h = mix(h + 0x9e3779b97f4a7c15L * (epoch + 1L));
        h = mix(h + 0xc2b2ae3d27d4eb4fL * (index + 1L));
        return new Generator(h);
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    @Override
    public boolean hasLabels() {
        return base.hasLabels();
    }

    @Override
    public long label(int index) {
        return base.label(index);
    }
}
