package org.ddp4j.distributed.fsdp;

import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;

/**
 * {@code fully_shard}'s keyword arguments that ddp4j takes, with PyTorch's defaults; each wither
 * returns a changed copy. Example:
 * {@code FullyShard.fullyShard(block, FullyShardOptions.defaults().reshardAfterForward(false))}.
 *
 * @param processGroup the group to shard over, or null for the default group (PyTorch's {@code mesh=None})
 * @param reshardAfterForward free the unit's gathered parameters once the forward has passed it
 *     and gather them again for its backward (PyTorch's default True); false keeps them from the
 *     forward to the unit's backward, trading memory for one all-gather. The root unit always keeps
 *     them, as in PyTorch, because its backward starts right away
 * @param mpPolicy the precisions (PyTorch's {@code mp_policy})
 */
public record FullyShardOptions(ProcessGroup processGroup, boolean reshardAfterForward, MixedPrecisionPolicy mpPolicy) {
    /** @throws NullPointerException if mpPolicy is null */
    public FullyShardOptions {
        java.util.Objects.requireNonNull(mpPolicy, "FullyShardOptions: mpPolicy is null (MixedPrecisionPolicy.defaults())");
    }

    /** PyTorch's defaults: default group, reshard after forward, float32 throughout. */
    public static FullyShardOptions defaults() {
        return new FullyShardOptions(null, true, MixedPrecisionPolicy.defaults());
    }

    public FullyShardOptions processGroup(ProcessGroup value) {
        return new FullyShardOptions(value, reshardAfterForward, mpPolicy);
    }

    public FullyShardOptions reshardAfterForward(boolean value) {
        return new FullyShardOptions(processGroup, value, mpPolicy);
    }

    public FullyShardOptions mpPolicy(MixedPrecisionPolicy value) {
        return new FullyShardOptions(processGroup, reshardAfterForward, value);
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
