package org.ddp4j.distributed;

/**
 * The old home of {@link org.ddp4j.data.DistributedSampler}, kept so that code importing
 * {@code org.ddp4j.distributed.*} still compiles.
 *
 * @deprecated the sampler lives with the data package, as PyTorch's
 *     {@code torch.utils.data.distributed.DistributedSampler}: import
 *     {@code org.ddp4j.data.DistributedSampler}
 */
@Deprecated
public final class DistributedSampler extends org.ddp4j.data.DistributedSampler {
    /** @deprecated see the class comment */
    @Deprecated
    public DistributedSampler(int datasetSize, Options options) {
        super(datasetSize, options);
    }

    /** @deprecated see the class comment */
    @Deprecated
    public DistributedSampler(int datasetSize, int numReplicas, int rank, boolean shuffle, long seed,
            boolean dropLast) {
        super(datasetSize, numReplicas, rank, shuffle, seed, dropLast);
    }

    /** @deprecated see the class comment */
    @Deprecated
    public DistributedSampler(int datasetSize, int numReplicas, int rank) {
        super(datasetSize, numReplicas, rank);
    }
}
