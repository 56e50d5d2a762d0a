package org.ddp4j.distributed.algorithms.ddpcommhooks;

import org.ddp4j.futures.Future;
import org.ddp4j.tensor.Tensor;

/**
 * A DDP communication hook: how one bucket of gradients is reduced over the ranks, as the
 * {@code hook(state, bucket) -> torch.futures.Future[torch.Tensor]} that PyTorch's
 * {@code DistributedDataParallel.register_comm_hook(state, hook)} takes. Registered with
 * {@code ddp.registerCommHook(state, hook)}.
 *
 * <p>DDP calls the hook on the training thread for each bucket, in bucket order (the same order
 * on every rank), as soon as the bucket's gradients are ready; the returned future must complete
 * with the bucket's reduced gradient: the flat float32 tensor of {@code bucket.buffer()}'s size
 * (the buffer itself after an in-place reduction, or another tensor DDP copies into it). The
 * result is what every parameter's {@code grad()} becomes, so for the usual mean, divide by the
 * world size as {@link DefaultHooks#allreduceHook} does. Collectives the hook issues, directly or
 * in callbacks ({@link Future#then}), must be the same on every rank.
 *
 * @param <S> the hook's state (the process group for the default hooks, {@link PowerSGDState} for PowerSGD)
 */
@FunctionalInterface
public interface CommHook<S> {
    /**
     * @param state the state passed to {@code registerCommHook}
     * @param bucket the bucket to reduce
     * @return the future of the reduced flat gradient
     */
    Future<Tensor> apply(S state, GradBucket bucket);
}
