package org.ddp4j.data;

import java.util.LinkedHashMap;
import java.util.Map;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * Language-model batches from a {@link TokenFile}: each example is a window of {@code blockSize + 1}
 * consecutive tokens starting at a random position, its first {@code blockSize} tokens the input and
 * its last {@code blockSize} the targets (the next token at each position). Mirrors nanoGPT's
 * {@code get_batch}:
 * <pre>{@code
 * ix = torch.randint(len(data) - block_size, (batch_size,))
 * x = torch.stack([data[i:i+block_size] for i in ix]); y = torch.stack([data[i+1:i+1+block_size] for i in ix])
 * }</pre>
 *
 * <p>Sharding across ranks as nanoGPT does: every rank reads the whole file and draws its own window
 * starts, from a generator seeded with (seed, rank) (nanoGPT seeds {@code 1337 + rank}), so ranks
 * see different windows. Batch number {@code s} of a rank comes from a {@link Generator} seeded with
 * a hash of (seed, rank, s), so the state is one counter ({@link #step()}): a checkpoint stores
 * {@link #stateDict()} and {@link #loadStateDict(Map)} continues with the very batches an
 * uninterrupted run would have drawn. The starts are uniform over [0, length - blockSize) but are
 * not torch's random numbers.
 *
 * <p>Not thread-safe: one instance per training loop.
 */
public final class TokenWindows {
    private final TokenFile tokens;
    private final int blockSize;
    private final int batchSize;
    private final long seed;
    private final int rank;
    private long step;

    /**
     * @param tokens the token file (e.g. train.bin), at least {@code blockSize + 1} tokens long
     * @param blockSize T, tokens per input row, {@code >= 1}
     * @param batchSize B, rows per batch, {@code >= 1}
     * @param seed the run's seed, the same on every rank
     * @param rank this process's rank, {@code >= 0}
     * @throws IllegalArgumentException naming the sizes when the file is shorter than one window, or a
     *     non-positive blockSize / batchSize, or a negative rank
     */
    public TokenWindows(TokenFile tokens, int blockSize, int batchSize, long seed, int rank) {
        if (blockSize < 1 || batchSize < 1) {
            throw new IllegalArgumentException("TokenWindows: block_size and batch_size must be at least 1, got block_size "
                    + blockSize + " and batch_size " + batchSize);
        }
        if (rank < 0) {
            throw new IllegalArgumentException("TokenWindows: rank must be >= 0, got " + rank);
        }
        if ((long) batchSize * blockSize > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("TokenWindows: batch_size x block_size = " + (long) batchSize * blockSize
                    + " tokens per batch is more than a Java array holds; use smaller batches and gradient accumulation");
        }
        if (tokens.length() < (long) blockSize + 1) {
            throw new IllegalArgumentException("TokenWindows: " + tokens.path() + " holds " + tokens.length()
                    + " tokens, fewer than the block_size + 1 = " + ((long) blockSize + 1) + " that one window needs"
                    + " (block_size inputs and the next token); use a smaller block size or a longer corpus");
        }
        this.tokens = tokens;
        this.blockSize = blockSize;
        this.batchSize = batchSize;
        this.seed = seed;
        this.rank = rank;
    }

    /**
     * The next batch: inputs x = int64 [B, T] and labels y = int64 [B, T] with {@code y[b][t] = x[b][t + 1]}
     * for t &lt; T - 1 and {@code y[b][T-1]} the token after the window's inputs. Advances {@link #step()}.
     * The caller closes the batch.
     */
    public Batch next() {
        long[] x = new long[batchSize * blockSize];
        long[] y = new long[batchSize * blockSize];
        fill(step, x, y);
        step++;
        return new Batch(Tensor.ofLongs(x, batchSize, blockSize), Tensor.ofLongs(y, batchSize, blockSize));
    }

    /**
     * Batch number {@code step}'s ids, without tensors and without advancing: row b of x holds tokens
     * [s_b, s_b + T) and row b of y tokens [s_b + 1, s_b + T + 1), s = {@link #windowStarts(long)}.
     *
     * @param x receives B·T ids, row-major [B, T]
     * @param y receives B·T ids, row-major [B, T]
     * @throws IllegalArgumentException if x or y does not hold exactly B·T values
     */
    public void fill(long step, long[] x, long[] y) {
        int n = batchSize * blockSize;
        if (x.length != n || y.length != n) {
            throw new IllegalArgumentException("TokenWindows.fill: x and y must hold batch_size * block_size = " + n
                    + " ids, got " + x.length + " and " + y.length);
        }
        long[] window = new long[blockSize + 1];
        long[] starts = windowStarts(step);
        for (int b = 0; b < batchSize; b++) {
            tokens.copyTo(starts[b], blockSize + 1, window, 0);
            System.arraycopy(window, 0, x, b * blockSize, blockSize);
            System.arraycopy(window, 1, y, b * blockSize, blockSize);
        }
    }

    /**
     * The first token of each of batch {@code step}'s B windows on this rank, uniform in [0,
     * {@link #windowCount()}).
     *
     * @throws IllegalArgumentException if step is negative
     */
    public long[] windowStarts(long step) {
        if (step < 0) {
            throw new IllegalArgumentException("TokenWindows: step must be >= 0, got " + step);
        }
        Generator generator = new Generator(mix(mix(mix(seed) ^ rank) ^ step));
        long bound = windowCount();
        long[] starts = new long[batchSize];
        for (int b = 0; b < batchSize; b++) {
            starts[b] = uniform(generator, bound);
        }
        return starts;
    }

    /** [0, bound) without bias; two draws when the bound does not fit an int (files over 2^31 tokens). */
    static long uniform(Generator generator, long bound) {
        if (bound <= Integer.MAX_VALUE) {
            return generator.nextInt((int) bound);
        }
        long m = Integer.MAX_VALUE;
        long range = m * m; // hi * m + lo is uniform in [0, m^2) for hi, lo uniform in [0, m)
        long limit = range - range % bound; // reject the short last range
        while (true) {
            long r = generator.nextInt(Integer.MAX_VALUE) * m + generator.nextInt(Integer.MAX_VALUE);
            if (r < limit) {
                return r % bound;
            }
        }
    }

    /** SplitMix64's finalizer: nearby (seed, rank, step) give unrelated generator seeds. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** The number of distinct windows, {@code length - blockSize} (nanoGPT's randint bound). */
    public long windowCount() {
        return tokens.length() - blockSize;
    }

    /** The number of batches {@link #next()} has made (or the restored count). */
    public long step() {
        return step;
    }

    /** T. */
    public int blockSize() {
        return blockSize;
    }

    /** B. */
    public int batchSize() {
        return batchSize;
    }

    /** This rank. */
    public int rank() {
        return rank;
    }

    /** The token file. */
    public TokenFile tokens() {
        return tokens;
    }

    /**
     * The position in the stream: {@code step}, plus {@code seed}, {@code block_size} and
     * {@code batch_size} to check on loading (JSON-friendly Longs and Integers). The rank is not
     * stored: each rank saves and loads its own, and a run resumed on other ranks draws their streams.
     */
    public Map<String, Object> stateDict() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("step", step);
        out.put("seed", seed);
        out.put("block_size", blockSize);
        out.put("batch_size", batchSize);
        return out;
    }

    /**
     * Continues from a {@link #stateDict()} (numbers of any boxed type, e.g. read back from JSON): the
     * next {@link #next()} is the batch an uninterrupted run would have drawn.
     *
     * @throws IllegalArgumentException naming the key when one is missing, the step is negative, or
     *     the seed, block size or batch size differ from this instance's (the batches would not be the
     *     same: make the TokenWindows with the checkpoint's values); nothing changes then
     */
    public void loadStateDict(Map<String, ?> state) {
        long newStep = number(state, "step");
        if (newStep < 0) {
            throw new IllegalArgumentException("TokenWindows.loadStateDict: step must be >= 0, got " + newStep);
        }
        expect(state, "seed", seed);
        expect(state, "block_size", blockSize);
        expect(state, "batch_size", batchSize);
        step = newStep;
    }

    private static long number(Map<String, ?> state, String key) {
        if (!(state.get(key) instanceof Number n)) {
            throw new IllegalArgumentException("TokenWindows.loadStateDict: the state dict has no number '" + key
                    + "' (got " + state.get(key) + "; a state dict of something else?)");
        }
        return n.longValue();
    }

    private static void expect(Map<String, ?> state, String key, long mine) {
        long saved = number(state, key);
        if (saved != mine) {
            throw new IllegalArgumentException("TokenWindows.loadStateDict: the checkpoint's " + key + " is " + saved
                    + " but this TokenWindows has " + mine + ", so its batches would differ from the checkpointed run's;"
                    + " make it with " + key + " " + saved);
        }
    }

    @Override
    public String toString() {
        return "TokenWindows(" + tokens + ", block_size " + blockSize + ", batch_size " + batchSize + ", rank " + rank
                + ", step " + step + ")";
    }
}
