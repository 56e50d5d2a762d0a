package org.ddp4j.data;

import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Random;
import org.ddp4j.distributed.Distributed;

/**
 * Gives each rank its own share of a dataset's indices: PyTorch's
 * {@code torch.utils.data.distributed.DistributedSampler}, with the index arithmetic of
 * PyTorch 1.13.
 *
 * <p>Per epoch: take {@code 0..datasetSize-1}, shuffled with seed {@code seed + epoch} if
 * {@code shuffle}; then, unless {@code dropLast}, pad it to {@link #totalSize()} by repeating
 * indices from its start (wrapping around as often as needed), or with {@code dropLast} cut it to
 * {@link #totalSize()}; rank {@code r} takes the indices at positions
 * {@code r, r + numReplicas, r + 2 numReplicas, ...}. Every rank thus gets {@link #size()} indices;
 * without {@code dropLast} a few samples are seen twice per epoch, with it a few are skipped.
 *
 * <p>Shuffling: the permutation is a Fisher-Yates shuffle driven by {@link java.util.Random}
 * seeded with {@code seed + epoch}. It is the same on every rank and every JVM (Random's algorithm
 * is fixed by its specification), but it is not bit-for-bit the permutation of
 * {@code torch.randperm}; without shuffling the indices equal PyTorch's exactly.
 *
 * <p>Call {@link #setEpoch} at the start of every epoch, with the same value on every rank;
 * otherwise each epoch uses the same order.
 */
public class DistributedSampler implements Sampler, Iterable<Integer> {
    private final int datasetSize;
    private final int numReplicas;
    private final int rank;
    private final boolean shuffle;
    private final long seed;
    private final boolean dropLast;
    private final int numSamples;
    private final int totalSize;
    private long epoch;

    /**
     * {@code torch.utils.data.distributed.DistributedSampler}'s keyword arguments with its defaults:
     * numReplicas and rank unset (then taken from the default process group, as PyTorch), shuffle
     * true, seed 0, dropLast false; each wither returns a changed copy. Example:
     * {@code new DistributedSampler(dataset.size(), DistributedSampler.Options.defaults().shuffle(false))}.
     *
     * @param numReplicas ranks taking part, or null for {@link Distributed#getWorldSize()}
     * @param rank this rank, or null for {@link Distributed#getRank()}
     */
    public record Options(Integer numReplicas, Integer rank, boolean shuffle, long seed, boolean dropLast) {
        /** PyTorch's defaults. */
        public static Options defaults() {
            return new Options(null, null, true, 0L, false);
        }

        /** Ranks taking part, {@code >= 1}. */
        public Options numReplicas(int value) {
            return new Options(value, rank, shuffle, seed, dropLast);
        }

        /** This rank, in [0, numReplicas). */
        public Options rank(int value) {
            return new Options(numReplicas, value, shuffle, seed, dropLast);
        }

        /** Whether to shuffle (with seed + epoch). */
        public Options shuffle(boolean value) {
            return new Options(numReplicas, rank, value, seed, dropLast);
        }

        /** The shuffle's seed; must be the same on every rank. */
        public Options seed(long value) {
            return new Options(numReplicas, rank, shuffle, value, dropLast);
        }

        /** Drop the tail that does not divide evenly instead of padding by wrapping around. */
        public Options dropLast(boolean value) {
            return new Options(numReplicas, rank, shuffle, seed, value);
        }
    }

    /**
     * Mirrors {@code DistributedSampler(dataset, **options)}; an unset numReplicas or rank comes
     * from the default process group.
     *
     * @throws IllegalStateException if numReplicas or rank is unset and no process group is initialised
     * @throws IllegalArgumentException as {@link #DistributedSampler(int, int, int, boolean, long, boolean)}
     */
    public DistributedSampler(int datasetSize, Options options) {
        this(datasetSize, options.numReplicas() != null ? options.numReplicas() : Distributed.getWorldSize(),
                options.rank() != null ? options.rank() : Distributed.getRank(), options.shuffle(), options.seed(),
                options.dropLast());
    }

    /**
     * A sampler for rank {@code rank} of {@code numReplicas}. Mirrors
     * {@code DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)}.
     *
     * @param datasetSize the number of samples in the dataset ({@code len(dataset)})
     * @param numReplicas the number of ranks sharing the dataset (usually the world size)
     * @param rank this rank, in {@code [0, numReplicas)}
     * @param shuffle whether to shuffle the indices each epoch
     * @param seed the shuffle seed; must be the same on every rank
     * @param dropLast whether to drop the tail that does not divide evenly (instead of padding)
     * @throws IllegalArgumentException if {@code numReplicas < 1}, {@code rank} is outside
     *     {@code [0, numReplicas)}, or {@code datasetSize < 0}
     */
    public DistributedSampler(int datasetSize, int numReplicas, int rank, boolean shuffle, long seed,
            boolean dropLast) {
        if (numReplicas < 1) {
            throw new IllegalArgumentException("numReplicas must be at least 1, got " + numReplicas);
        }
        if (rank < 0 || rank >= numReplicas) {
            throw new IllegalArgumentException("Invalid rank " + rank + ", rank should be in the interval [0, "
                    + (numReplicas - 1) + "]");
        }
        if (datasetSize < 0) {
            throw new IllegalArgumentException("datasetSize must not be negative, got " + datasetSize);
        }
        this.datasetSize = datasetSize;
        this.numReplicas = numReplicas;
        this.rank = rank;
        this.shuffle = shuffle;
        this.seed = seed;
        this.dropLast = dropLast;
        long samples;
        if (dropLast && datasetSize % numReplicas != 0) {
            // math.ceil((len - n) / n): the argument lies in (-1, len/n), so this is floor(len / n).
            samples = Math.floorDiv(datasetSize, numReplicas);
        } else {
            samples = ((long) datasetSize + numReplicas - 1) / numReplicas; // math.ceil(len / n)
        }
        long total = samples * numReplicas;
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("datasetSize " + datasetSize + " padded for " + numReplicas
                    + " replicas exceeds the largest Java array");
        }
        this.numSamples = (int) samples;
        this.totalSize = (int) total;
    }

    /**
     * {@code DistributedSampler(datasetSize, numReplicas, rank, true, 0, false)}: shuffled with
     * seed 0, padded; PyTorch's defaults.
     *
     * @throws IllegalArgumentException as the full constructor
     */
    public DistributedSampler(int datasetSize, int numReplicas, int rank) {
        this(datasetSize, numReplicas, rank, true, 0L, false);
    }

    /**
     * Sets the epoch, which (with the seed) chooses the shuffle order; call it before each epoch
     * with the same value on every rank. Mirrors {@code DistributedSampler.set_epoch}.
     */
    public void setEpoch(long epoch) {
        this.epoch = epoch;
    }

    /** The current epoch (0 until {@link #setEpoch} is called). */
    public long epoch() {
        return epoch;
    }

    /**
     * This rank's dataset indices for the current epoch, in visiting order; a new array of
     * length {@link #size()} on every call. Mirrors {@code iter(DistributedSampler)}.
     */
    @Override
    public int[] indices() {
        int[] all = shuffle ? permutation(datasetSize, seed + epoch) : identity(datasetSize);
        int[] padded;
        if (!dropLast) {
            padded = Arrays.copyOf(all, totalSize);
            // padding_size = total - len; repeat indices from the start, wrapping as often as needed.
            for (int i = datasetSize; i < totalSize; i++) {
                padded[i] = all[(i - datasetSize) % datasetSize];
            }
        } else {
            padded = all; // only the first totalSize are read below
        }
        int[] mine = new int[numSamples];
        for (int i = 0, j = rank; i < numSamples; i++, j += numReplicas) {
            mine[i] = padded[j];
        }
        return mine;
    }

    /** This rank's number of indices per epoch ({@code num_samples}). Mirrors {@code len(DistributedSampler)}. */
    @Override
    public int size() {
        return numSamples;
    }

    /**
     * How many of this rank's {@link #indices()} are not padding: the first {@code unpaddedSize()}
     * are distinct samples of the dataset; the rest (at most one, without {@code dropLast}) repeat
     * samples that other ranks also visit. Count only these when evaluating on a sharded test set, so
     * the ranks' counts add up to the dataset's size exactly (e.g. {@link org.ddp4j.metrics.Accuracy#update(org.ddp4j.tensor.Tensor, org.ddp4j.tensor.Tensor, int)}).
     */
    public int unpaddedSize() {
        if (dropLast) {
            return numSamples;
        }
        // rank r's i-th index sits at position i * numReplicas + r of the padded list; padding starts at datasetSize
        int real = datasetSize > rank ? (datasetSize - rank + numReplicas - 1) / numReplicas : 0;
        return Math.min(real, numSamples);
    }

    /** The number of indices over all ranks per epoch ({@code total_size = num_samples * numReplicas}). */
    public int totalSize() {
        return totalSize;
    }

    /** The number of samples in the dataset. */
    public int datasetSize() {
        return datasetSize;
    }

    /** The number of ranks sharing the dataset. */
    public int numReplicas() {
        return numReplicas;
    }

    /** This sampler's rank. */
    public int rank() {
        return rank;
    }

    /** Whether the indices are shuffled each epoch. */
    public boolean shuffle() {
        return shuffle;
    }

    /** The shuffle seed. */
    public long seed() {
        return seed;
    }

    /** Whether the uneven tail is dropped instead of padded. */
    public boolean dropLast() {
        return dropLast;
    }

    /** Iterates over {@link #indices()} for the epoch current when the iterator is created. */
    @Override
    public Iterator<Integer> iterator() {
        int[] idx = indices();
        return new Iterator<>() {
            private int next;

            @Override
            public boolean hasNext() {
                return next < idx.length;
            }

            @Override
            public Integer next() {
                if (next >= idx.length) {
                    throw new NoSuchElementException();
                }
                return idx[next++];
            }
        };
    }

    private static int[] identity(int n) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) {
            a[i] = i;
        }
        return a;
    }

    /** A permutation of {@code 0..n-1}: Fisher-Yates with {@link Random} seeded by {@code seed}. */
    static int[] permutation(int n, long seed) {
        int[] a = identity(n);
        Random random = new Random(seed);
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
        return a;
    }

    @Override
    public String toString() {
        return "DistributedSampler(datasetSize=" + datasetSize + ", numReplicas=" + numReplicas + ", rank=" + rank
                + ", shuffle=" + shuffle + ", seed=" + seed + ", dropLast=" + dropLast + ", epoch=" + epoch + ")";
    }
}
