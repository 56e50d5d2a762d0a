package org.ddp4j.distributed;

import org.ddp4j.nn.Module;

/**
 * The old home of {@link org.ddp4j.nn.parallel.DistributedDataParallel}, kept so that code
 * importing {@code org.ddp4j.distributed.*} still compiles.
 *
 * @deprecated DDP lives where PyTorch keeps it ({@code torch.nn.parallel}): import
 *     {@code org.ddp4j.nn.parallel.DistributedDataParallel}
 */
@Deprecated
public final class DistributedDataParallel extends org.ddp4j.nn.parallel.DistributedDataParallel {
    /** @deprecated see the class comment */
    @Deprecated
    public DistributedDataParallel(Module module) {
        super(module);
    }

    /** @deprecated see the class comment */
    @Deprecated
    public DistributedDataParallel(Module module, org.ddp4j.nn.parallel.DistributedDataParallelOptions options) {
        super(module, options);
    }

    /** @deprecated see the class comment */
    @Deprecated
    public DistributedDataParallel(Module module, ProcessGroup group, long bucketCapBytes) {
        super(module, group, bucketCapBytes);
    }

    /** @deprecated see the class comment */
    @Deprecated
    public DistributedDataParallel(Module module, ProcessGroup group, long bucketCapBytes,
            boolean findUnusedParameters) {
        super(module, group, bucketCapBytes, findUnusedParameters);
    }
}
