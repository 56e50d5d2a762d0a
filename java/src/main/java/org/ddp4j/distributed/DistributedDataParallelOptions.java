package org.ddp4j.distributed;

/**
 * The old home of {@link org.ddp4j.nn.parallel.DistributedDataParallelOptions}: its factory, so
 * that {@code DistributedDataParallelOptions.defaults().bucketCapMb(50)} still compiles.
 *
 * @deprecated import {@code org.ddp4j.nn.parallel.DistributedDataParallelOptions}
 */
@Deprecated
public final class DistributedDataParallelOptions {
    private DistributedDataParallelOptions() {}

    /**
     * PyTorch's defaults: default group, 25 MiB buckets, find_unused_parameters False.
     *
     * @deprecated use {@link org.ddp4j.nn.parallel.DistributedDataParallelOptions#defaults()}
     */
    @Deprecated
    public static org.ddp4j.nn.parallel.DistributedDataParallelOptions defaults() {
        return org.ddp4j.nn.parallel.DistributedDataParallelOptions.defaults();
    }
}
