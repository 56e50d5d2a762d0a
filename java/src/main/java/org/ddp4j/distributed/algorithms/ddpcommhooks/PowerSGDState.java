package org.ddp4j.distributed.algorithms.ddpcommhooks;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * The state of {@link PowerSGD#powerSGDHook}: its options, the iteration count, the error
 * feedback and warm-start memory of each bucket, and the generator of the random initial Qs.
 * Mirrors {@code torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook.PowerSGDState}, with
 * its defaults. One state per DDP model; it holds tensors on the group's device, freed by
 * {@link #close()}.
 *
 * <p>The state goes into training checkpoints through {@link #stateDict()} (keys
 * {@code iter}, {@code rng_draws}, {@code error.<bucket>}, {@code p_memory.<bucket>},
 * {@code q_memory.<bucket>}), as PyTorch pickles it without its process group.
 */
public final class PowerSGDState implements CommHookState, AutoCloseable {
    /** Supplies the random initial Qs of a bucket: {@code count} floats, identical on every rank. */
    interface QInitializer {
        float[] initialQs(int bucketIndex, int count, long seed);
    }

    final ProcessGroup processGroup;
    final int matrixApproximationRank;
    final long startPowerSGDIter;
    final double minCompressionRate;
    final boolean useErrorFeedback;
    final boolean warmStart;
    final float orthogonalizationEpsilon;
    final long randomSeed;

    long iter;
    /** How many seeds the generator has handed out (PyTorch: state.rng.randint per randomisation). */
    long rngDraws;
    final Map<Integer, Tensor> errorDict = new TreeMap<>();
    final Map<Integer, Tensor> pMemoryDict = new TreeMap<>();
    final Map<Integer, Tensor> qMemoryDict = new TreeMap<>();
    long totalNumelBeforeCompression;
    long totalNumelAfterCompression;
    QInitializer qInitializer = (bucket, count, seed) -> new Generator(seed).normal(count);

    /** PyTorch's defaults: rank 1, PowerSGD from iteration 1000, compression rate 2, error feedback and warm start on. */
    public PowerSGDState(ProcessGroup processGroup) {
        this(processGroup, 1, 1000, 2, true, true, 0f, 0);
    }

    /**
     * @param processGroup the group to reduce over (null: the default group)
     * @param matrixApproximationRank r: each compressed gradient M [n, m] is sent as P [n, r] and
     *     Q [m, r] (r is capped at min(n, m))
     * @param startPowerSGDIter iterations of plain all-reduce before compressing (DDP rebuilds its
     *     buckets after the first, so with error feedback or warm start this must be above 1)
     * @param minCompressionRate a gradient is compressed only when n·m > (n + m)·r·minCompressionRate
     * @param useErrorFeedback add each bucket's last compression error to its next gradient
     * @param warmStart start each iteration's Q from the last one's instead of random values
     * @param orthogonalizationEpsilon added to the column norms in Gram–Schmidt (0: none; a small
     *     value such as 1e-8 avoids NaN from an all-zero column)
     * @param randomSeed seeds the initial Qs (the same on every rank)
     * @throws IllegalArgumentException for a rank below 1, a negative compression rate or
     *     epsilon, or startPowerSGDIter &lt;= 1 with error feedback or warm start
     */
    public PowerSGDState(ProcessGroup processGroup, int matrixApproximationRank, long startPowerSGDIter,
            double minCompressionRate, boolean useErrorFeedback, boolean warmStart, float orthogonalizationEpsilon,
            long randomSeed) {
        if (matrixApproximationRank < 1) {
            throw new IllegalArgumentException("PowerSGDState: matrixApproximationRank must be at least 1, got "
                    + matrixApproximationRank);
        }
        if ((useErrorFeedback || warmStart) && startPowerSGDIter <= 1) {
            throw new IllegalArgumentException("PowerSGDState: expect startPowerSGDIter > 1 if useErrorFeedback or"
                    + " warmStart is enabled, got " + startPowerSGDIter + ": DDP rebuilds its buckets after the first"
                    + " iteration, which would mix up the per-bucket memory (as PyTorch requires)");
        }
        if (!(minCompressionRate >= 0) || !(orthogonalizationEpsilon >= 0)) {
            throw new IllegalArgumentException("PowerSGDState: minCompressionRate and orthogonalizationEpsilon must be"
                    + " non-negative, got " + minCompressionRate + " and " + orthogonalizationEpsilon);
        }
        this.processGroup = processGroup;
        this.matrixApproximationRank = matrixApproximationRank;
        this.startPowerSGDIter = startPowerSGDIter;
        this.minCompressionRate = minCompressionRate;
        this.useErrorFeedback = useErrorFeedback;
        this.warmStart = warmStart;
        this.orthogonalizationEpsilon = orthogonalizationEpsilon;
        this.randomSeed = randomSeed;
    }

    ProcessGroup group() {
        return processGroup != null ? processGroup : Distributed.defaultGroup();
    }

    /**
     * The hook and its settings in words, e.g. {@code powerSGD_hook (matrix approximation rank 2, from
     * iteration 10)}: what DDP names when the ranks' hooks differ.
     */
    @Override
    public String toString() {
        return "powerSGD_hook (matrix approximation rank " + matrixApproximationRank + ", from iteration "
                + startPowerSGDIter + ", error feedback " + (useErrorFeedback ? "on" : "off") + ")";
    }

    /** The iterations counted so far (one per DDP backward, on its last bucket). Mirrors {@code state.iter}. */
    public long iter() {
        return iter;
    }

    /** Counts an iteration when {@code bucket} is the last of it. Mirrors {@code maybe_increase_iter}. */
    void maybeIncreaseIter(GradBucket bucket) {
        if (bucket.isLast()) {
            iter++;
        }
    }

    /** The next seed for random Qs: a pure function of the random seed and the draws so far, so every rank agrees. */
    long nextSeed() {
        long z = randomSeed * 0x9E3779B97F4A7C15L + (++rngDraws) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return (z ^ (z >>> 31)) & 0x7fffffffL;
    }

    /** Test seam: where the initial Qs come from (the golden test injects PyTorch's). */
    void setQInitializer(QInitializer initializer) {
        this.qInitializer = initializer;
    }

    /**
     * (numel before, numel after) compression over all buckets so far, as {@code compression_stats()}
     * reports them; their ratio is the compression rate.
     */
    public long[] compressionStats() {
        return new long[] {totalNumelBeforeCompression, totalNumelAfterCompression};
    }

    @Override
    public Map<String, Tensor> stateDict() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        out.put("iter", Tensor.ofLongs(new long[] {iter}, 1).keep());
        out.put("rng_draws", Tensor.ofLongs(new long[] {rngDraws}, 1).keep());
        putAll(out, "error.", errorDict);
        putAll(out, "p_memory.", pMemoryDict);
        putAll(out, "q_memory.", qMemoryDict);
        return out;
    }

    private static void putAll(Map<String, Tensor> out, String prefix, Map<Integer, Tensor> dict) {
        for (Map.Entry<Integer, Tensor> e : dict.entrySet()) {
            out.put(prefix + e.getKey(), e.getValue().to(org.ddp4j.tensor.Device.CPU).copy().keep());
        }
    }

    @Override
    public void loadStateDict(Map<String, Tensor> state) {
        Tensor it = state.get("iter");
        Tensor draws = state.get("rng_draws");
        if (it == null || draws == null || it.dtype() != DType.INT64 || draws.dtype() != DType.INT64) {
            throw new IllegalArgumentException("PowerSGDState.loadStateDict: expected int64 entries 'iter' and"
                    + " 'rng_draws', got " + state.keySet() + "; pass what stateDict() returned");
        }
        clearDicts();
        iter = it.toLongArray()[0];
        rngDraws = draws.toLongArray()[0];
        for (Map.Entry<String, Tensor> e : state.entrySet()) {
            String key = e.getKey();
            Map<Integer, Tensor> dict = key.startsWith("error.") ? errorDict
                    : key.startsWith("p_memory.") ? pMemoryDict : key.startsWith("q_memory.") ? qMemoryDict : null;
            if (dict == null) {
                continue;
            }
            if (e.getValue().dtype() != DType.FLOAT32 || e.getValue().dim() != 1) {
                throw new IllegalArgumentException("PowerSGDState.loadStateDict: '" + key + "' must be a 1-D float32"
                        + " tensor, got " + e.getValue().describe());
            }
            int bucket = Integer.parseInt(key.substring(key.indexOf('.') + 1));
            dict.put(bucket, e.getValue().to(group().device()).copy().keep());
        }
    }

    private void clearDicts() {
        for (Map<Integer, Tensor> d : java.util.List.of(errorDict, pMemoryDict, qMemoryDict)) {
            for (Tensor t : d.values()) {
                t.close();
            }
            d.clear();
        }
    }

    /** Frees the error feedback and warm-start memory. */
    @Override
    public void close() {
        clearDicts();
    }
}
