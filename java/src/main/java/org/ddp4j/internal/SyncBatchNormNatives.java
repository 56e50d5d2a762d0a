package org.ddp4j.internal;

/**
 * JNI declarations for SyncBatchNorm's local passes, native/src/core/ops_sync_batch_norm.cpp's
 * family (native/src/jni/sync_batch_norm_natives.cpp; Java side
 * {@link org.ddp4j.nn.functional.SyncBatchNormFunction}); PyTorch's {@code torch.batch_norm_stats},
 * {@code batch_norm_gather_stats_with_counts}, {@code batch_norm_elemt},
 * {@code batch_norm_backward_reduce} and {@code batch_norm_backward_elemt}. Arguments are tensor
 * handles; x is float32 [N, C, ...] (at least 2-D, N may be 0), per-channel tensors float32 [C].
 * Bad shapes or dtypes throw {@link IllegalArgumentException} naming the op and the shapes. Callers
 * own every returned handle; natives that create tensors fill the thread's
 * {@link NativeResults#buffer()} as {@code results}, one slot per output.
 */
public final class SyncBatchNormNatives {
    static {
        NativeLibrary.load();
    }

    private SyncBatchNormNatives() {}

    /**
     * This rank's statistics row, float32 [3C + 2]: {count_hi, count_lo, mean_hi [C], mean_lo [C],
     * m2 [C]} (count = count_hi * 2^24 + count_lo values per channel, mean as two floats, m2 the sum
     * of squared deviations; sums in double). Returns the row.
     */
    public static native long syncBatchNormStats(long x, long[] results);

    /**
     * Combines the rows of every rank, gathered float32 [W * (3C + 2)]: fills results with
     * {saveMean [C], saveInvstd [C], saveMeanLo [C]} (the group's mean is saveMean + saveMeanLo, a
     * double in two floats; the biased variance over the group) and updates runningMean /
     * runningVar (0 for none: both or neither) with the unbiased one. Returns the group's count of
     * values per channel.
     *
     * @throws IllegalArgumentException when that count is at most 1 ("expected more than 1 value per
     *     channel when training", with each rank's count); nothing is updated then
     */
    public static native long syncBatchNormGatherStats(long gathered, long channels, long runningMean, long runningVar,
            double momentum, double eps, long[] results);

    /**
     * y = (x - (mean + meanLo)) * invstd * gamma + beta per channel, and with relu {@code relu(y +
     * residual)} in the same pass (residual 0 for none, else float32 of x's shape); returns y.
     */
    public static native long syncBatchNormElemt(long x, long mean, long meanLo, long invstd, long gamma, long beta,
            long residual, boolean relu, long[] results);

    /**
     * This rank's gradient sums: fills results with {sums [2C] = (Σ gy, Σ gy (x - mean)), ggamma [C]
     * = Σ gy (x - mean) * invstd, gbeta [C] = Σ gy}, mean = mean + meanLo.
     */
    public static native void syncBatchNormBackwardReduce(long gy, long x, long mean, long meanLo, long invstd,
            long[] results);

    /** gx from the group's sums [2C] and its count of values per channel (positive); returns gx. */
    public static native long syncBatchNormBackwardElemt(long gy, long x, long mean, long meanLo, long invstd, long gamma,
            long sums, long count, long[] results);
}
