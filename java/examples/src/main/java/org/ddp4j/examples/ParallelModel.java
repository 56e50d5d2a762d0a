package org.ddp4j.examples;

import java.util.List;
import java.util.function.Supplier;
import org.ddp4j.distributed.fsdp.FSDPModule;
import org.ddp4j.distributed.fsdp.FullyShard;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.tensor.Tensor;

/**
 * The one call a training loop changes between DistributedDataParallel and fully_shard: how a
 * forward runs, which tensors the optimizer steps, and how accumulation skips the reduction.
 */
abstract class ParallelModel implements AutoCloseable {
    /** The tensors the optimizer steps: the model's parameters under DDP, the shards under fully_shard. */
    abstract List<Tensor> trainedParameters();

    /** A training forward (the backward reduces its gradients). */
    abstract Tensor call(Supplier<Tensor> forward);

    /** A forward under no_grad (validation): fully_shard gathers and frees unit by unit. */
    abstract Tensor evaluate(Supplier<Tensor> forward);

    /** Skips the gradient reduction until closed: DDP's no_sync, FSDP's set_requires_gradient_sync(False). */
    abstract SyncOff noSync();

    /** A scope without gradient reduction. */
    interface SyncOff extends AutoCloseable {
        @Override
        void close();
    }

    /** Gathers every parameter whole on every rank (a collective), so they can be read without one. */
    abstract void gatherAll();

    @Override
    public abstract void close();

    static ParallelModel ddp(Module net, DistributedDataParallel ddp) {
        return new ParallelModel() {
            @Override
            List<Tensor> trainedParameters() {
                return net.parameters();
            }

            @Override
            Tensor call(Supplier<Tensor> forward) {
                return ddp.call(forward);
            }

            @Override
            Tensor evaluate(Supplier<Tensor> forward) {
                return forward.get();
            }

            @Override
            SyncOff noSync() {
                return ddp.noSync()::close;
            }

            @Override
            void gatherAll() {}

            @Override
            public void close() {
                ddp.close();
            }
        };
    }

    /** fully_shard on each of {@code units} (the transformer blocks), then on net. */
    static ParallelModel fullyShard(Module net, Iterable<? extends Module> units) {
        for (Module unit : units) {
            FullyShard.fullyShard(unit);
        }
        FSDPModule fsdp = FullyShard.fullyShard(net);
        return new ParallelModel() {
            @Override
            List<Tensor> trainedParameters() {
                return fsdp.parameters();
            }

            @Override
            Tensor call(Supplier<Tensor> forward) {
                return fsdp.call(forward);
            }

            @Override
            Tensor evaluate(Supplier<Tensor> forward) {
                return fsdp.call(forward);
            }

            @Override
            SyncOff noSync() {
                fsdp.setRequiresGradientSync(false);
                return () -> fsdp.setRequiresGradientSync(true);
            }

            @Override
            void gatherAll() {
                fsdp.unshard();
            }

            @Override
            public void close() {
                fsdp.close();
            }
        };
    }
}
