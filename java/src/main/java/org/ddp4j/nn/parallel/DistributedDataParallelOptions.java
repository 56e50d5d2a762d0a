package org.ddp4j.nn.parallel;

import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;

/**
 * {@code torch.nn.parallel.DistributedDataParallel}'s keyword arguments that ddp4j takes, with
 * PyTorch's defaults; each wither returns a changed copy. Example:
 * {@code new DistributedDataParallel(model, DistributedDataParallelOptions.defaults().bucketCapMb(50))}.
 *
 * @param processGroup the group to average over, or null for the default group (PyTorch's {@code process_group=None})
 * @param bucketCapMb the most gradient MiB in one bucket (PyTorch's {@code bucket_cap_mb=25}); the
 *     first bucket holds at most 1 MiB, as PyTorch
 * @param findUnusedParameters accepted for compatibility with PyTorch's {@code find_unused_parameters};
 *     recorded only, it changes nothing here
 */
public record DistributedDataParallelOptions(ProcessGroup processGroup, double bucketCapMb,
        boolean findUnusedParameters) {
    /** PyTorch's defaults: default group, 25 MiB buckets, find_unused_parameters False. */
    public static DistributedDataParallelOptions defaults() {
        return new DistributedDataParallelOptions(null, 25, false);
    }

    /** The group to average over (null: the default group). */
    public DistributedDataParallelOptions processGroup(ProcessGroup value) {
        return new DistributedDataParallelOptions(value, bucketCapMb, findUnusedParameters);
    }

    /** Bucket size in MiB, {@code > 0}. */
    public DistributedDataParallelOptions bucketCapMb(double value) {
        return new DistributedDataParallelOptions(processGroup, value, findUnusedParameters);
    }

    /** PyTorch's find_unused_parameters, for name compatibility. */
    public DistributedDataParallelOptions findUnusedParameters(boolean value) {
        return new DistributedDataParallelOptions(processGroup, bucketCapMb, value);
    }

    /**
     * The bucket cap in bytes, as PyTorch computes it: {@code int(bucket_cap_mb * 1024 * 1024)}.
     *
     * @throws IllegalArgumentException "bucket_cap_mb must be positive, got 0.0"
     */
    public long bucketCapBytes() {
        if (!(bucketCapMb > 0)) {
            throw new IllegalArgumentException("bucket_cap_mb must be positive, got " + bucketCapMb);
        }
        return (long) (bucketCapMb * 1024 * 1024);
    }

    /**
     * The group to use: {@link #processGroup()}, or the default one.
     *
     * @throws IllegalStateException if it is unset and {@link Distributed#initProcessGroup} was not called
     */
    public ProcessGroup resolvedProcessGroup() {
        return processGroup != null ? processGroup : Distributed.defaultGroup();
    }
}
