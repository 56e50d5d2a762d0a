package org.ddp4j.tensor;

import java.util.SplittableRandom;

/**
 * A seedable source of random numbers for initialisation and shuffling. Mirrors
 * {@code torch.Generator} / {@code torch.manual_seed}: the same seed gives the same parameters on
 * every rank and every run (the streams differ from PyTorch's).
 */
public final class Generator {
    private static final Generator DEFAULT = new Generator(0);

    private SplittableRandom random;

    /** A generator seeded with {@code seed}. */
    public Generator(long seed) {
        manualSeed(seed);
    }

    /** The process-wide default generator that modules use when none is given. */
    public static Generator defaultGenerator() {
        return DEFAULT;
    }

    /** Re-seeds the default generator. Mirrors {@code torch.manual_seed}. */
    public static void manualSeedAll(long seed) {
        DEFAULT.manualSeed(seed);
    }

    /** Re-seeds this generator. */
    public synchronized Generator manualSeed(long seed) {
        random = new SplittableRandom(seed);
        return this;
    }

    /** A float uniform in [low, high). */
    public synchronized float uniform(float low, float high) {
        return (float) (low + (high - low) * random.nextDouble());
    }

    /** {@code n} floats uniform in [low, high). */
    public synchronized float[] uniform(int n, float low, float high) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) (low + (high - low) * random.nextDouble());
        }
        return out;
    }

    /** {@code n} floats from the standard normal distribution. */
    public synchronized float[] normal(int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) nextGaussian();
        }
        return out;
    }

    /** A uniformly random permutation of 0..n-1 (Fisher–Yates). */
    public synchronized int[] permutation(int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int tmp = p[i];
            p[i] = p[j];
            p[j] = tmp;
        }
        return p;
    }

    private double nextGaussian() {
        // Box–Muller: SplittableRandom has no nextGaussian on Java 17.
        double u1 = 1.0 - random.nextDouble();
        double u2 = random.nextDouble();
        return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    }
}
