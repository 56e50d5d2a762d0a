package org.ddp4j.tensor;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * A seedable source of random numbers for initialisation, shuffling and dropout. Mirrors
 * {@code torch.Generator} / {@code torch.manual_seed}: the same seed gives the same parameters on
 * every rank and every run (the streams differ from PyTorch's). The stream is SplitMix64, the
 * same numbers as {@code new java.util.SplittableRandom(seed)} gives, kept as one 64-bit state
 * so that {@link #getState()} / {@link #setState(byte[])} can save and restore it.
 */
public final class Generator {
    private static final Generator DEFAULT = new Generator(0);
    /** SplittableRandom's increment for an unsplit generator (the golden ratio's odd 64-bit fraction). */
    private static final long GAMMA = 0x9e3779b97f4a7c15L;
    /** Bytes of {@link #getState()}: a version byte, then the 64-bit state, little-endian. */
    private static final int STATE_BYTES = 9;
    private static final byte STATE_VERSION = 1;

    private long state;

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

    /**
     * Returns the default generator's state ({@link #getState()}). Mirrors {@code torch.get_rng_state()}.
     */
    public static byte[] getRngState() {
        return DEFAULT.getState();
    }

    /**
     * Restores the default generator's state. Mirrors {@code torch.set_rng_state(state)}.
     *
     * @throws IllegalArgumentException as {@link #setState(byte[])}
     */
    public static void setRngState(byte[] state) {
        DEFAULT.setState(state);
    }

    /** Re-seeds this generator. Mirrors {@code Generator.manual_seed}. */
    public synchronized Generator manualSeed(long seed) {
        state = seed;
        return this;
    }

    /**
     * The generator's state as bytes (9: a format version, then the 64-bit SplitMix64 state), to
     * store in a checkpoint; {@link #setState(byte[])} continues the stream exactly where it was.
     * Mirrors {@code Generator.get_state()} (a uint8 tensor in PyTorch).
     */
    public synchronized byte[] getState() {
        return ByteBuffer.allocate(STATE_BYTES).order(ByteOrder.LITTLE_ENDIAN).put(STATE_VERSION).putLong(state).array();
    }

    /**
     * Restores a state from {@link #getState()}. Mirrors {@code Generator.set_state(state)}.
     *
     * @throws IllegalArgumentException if state is not one written by getState (its length or version)
     */
    public synchronized Generator setState(byte[] state) {
        Objects.requireNonNull(state, "state");
        if (state.length != STATE_BYTES || state[0] != STATE_VERSION) {
            throw new IllegalArgumentException("Generator.setState: expected the " + STATE_BYTES + " bytes that"
                    + " getState() writes (version " + STATE_VERSION + "), got " + state.length + " bytes"
                    + (state.length > 0 ? " starting with version " + state[0] : "")
                    + "; pass what getState() returned, unchanged");
        }
        this.state = ByteBuffer.wrap(state).order(ByteOrder.LITTLE_ENDIAN).getLong(1);
        return this;
    }

    /** A float uniform in [low, high). */
    public synchronized float uniform(float low, float high) {
        return (float) (low + (high - low) * nextDouble());
    }

    /**
     * An int uniform in [0, bound) (e.g. a crop offset).
     *
     * @throws IllegalArgumentException if bound is not positive
     */
    public synchronized int nextInt(int bound) {
        if (bound <= 0) {
            throw new IllegalArgumentException("Generator.nextInt: bound must be positive, got " + bound);
        }
        return boundedInt(bound);
    }

    /** {@code n} floats uniform in [low, high). */
    public synchronized float[] uniform(int n, float low, float high) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) (low + (high - low) * nextDouble());
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
            int j = boundedInt(i + 1);
            int tmp = p[i];
            p[i] = p[j];
            p[j] = tmp;
        }
        return p;
    }

    private double nextGaussian() {
        // Box–Muller (the stream predates a state-carrying generator; kept so seeds give the same values)
        double u1 = 1.0 - nextDouble();
        double u2 = nextDouble();
        return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    }

    // SplitMix64, as java.util.SplittableRandom: each draw advances the state by GAMMA and mixes it.

    private long nextSeed() {
        return state += GAMMA;
    }

    private static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    private static int mix32(long z) {
        z = (z ^ (z >>> 33)) * 0x62a9d9ed799705f5L;
        return (int) (((z ^ (z >>> 28)) * 0xcb24d0a5c88c35b3L) >>> 32);
    }

    private double nextDouble() {
        return (mix64(nextSeed()) >>> 11) * 0x1.0p-53;
    }

    /** [0, bound) without bias: SplittableRandom's nextInt(bound) (rejection of the short last range). */
    private int boundedInt(int bound) {
        int r = mix32(nextSeed());
        int m = bound - 1;
        if ((bound & m) == 0) {
            return r & m;
        }
        for (int u = r >>> 1; u + m - (r = u % bound) < 0; u = mix32(nextSeed()) >>> 1) {
            // reject
        }
        return r;
    }
}
