package org.ddp4j.nn;

import java.lang.System.Logger.Level;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.nn.functional.SyncBatchNormFunction;
import org.ddp4j.tensor.Tensor;

/**
 * Batch normalisation whose training-mode statistics are those of the whole process group's batch:
 * PyTorch's {@code torch.nn.SyncBatchNorm}, on CPU tensors (Gloo, shared memory) as well as on GPUs
 * (NCCL) — PyTorch's runs on GPUs only. Parameters and buffers are BatchNorm2d's ({@code weight},
 * {@code bias}, {@code running_mean}, {@code running_var}, {@code num_batches_tracked}), so state
 * dicts load into either; it prints as PyTorch's: {@code SyncBatchNorm(64, eps=1e-05, momentum=0.1,
 * affine=True, track_running_stats=True)}.
 *
 * <p>In training mode every rank of the group must run the layer in the same order (it issues one
 * all-gather in forward and one all-reduce in backward; see {@link SyncBatchNormFunction}). Ranks
 * may have different batch sizes, including 0: such a rank contributes nothing to the statistics,
 * gets an empty output, and still takes part. The running statistics are updated with the group's
 * unbiased variance, so they are the same on every rank. In eval mode (with running statistics)
 * it normalises with them and communicates nothing. Input is float32 [N, C, H, W], or [N, C] and
 * [N, C, L] (BatchNorm1d's shapes) and more trailing dimensions.
 *
 * <p>Without a group to synchronise over — no {@code processGroup} given and
 * {@link Distributed#initProcessGroup} not called, or a group of one rank — it computes exactly
 * what {@link BatchNorm2d} does (PyTorch raises in training mode when no group is initialised; a
 * single-process run of a converted model working unchanged is the more useful choice). The first
 * such forward logs it once at DEBUG level ({@code System.Logger} "org.ddp4j.nn.SyncBatchNorm").
 *
 * <p>It extends BatchNorm2d (PyTorch's SyncBatchNorm is a sibling of BatchNorm2d, not a subclass) so
 * that models holding their layers in BatchNorm2d fields, as the ResNets do, run it once converted.
 */
public class SyncBatchNorm extends BatchNorm2d {
    private static final System.Logger LOG = System.getLogger(SyncBatchNorm.class.getName());

    private final ProcessGroup processGroup;
    private boolean loggedLocal;

    /** With PyTorch's defaults (eps 1e-5, momentum 0.1, affine, running statistics) on the default group. */
    public SyncBatchNorm(int numFeatures) {
        this(numFeatures, 1e-5, 0.1, true, true, null);
    }

    /**
     * Mirrors {@code torch.nn.SyncBatchNorm(num_features, eps, momentum, affine, track_running_stats,
     * process_group)}.
     *
     * @param numFeatures the channel count C
     * @param eps added to the variance for stability (non-negative)
     * @param momentum weight of each batch in the running statistics, in [0, 1], or null for a
     *     cumulative moving average
     * @param affine whether the layer has the learnable per-channel weight and bias
     * @param trackRunningStats whether the layer keeps running statistics (and uses them in eval mode)
     * @param processGroup the ranks whose batches are normalised together, or null for the default
     *     group (resolved at each forward, so the layer may be built before initProcessGroup)
     * @throws IllegalArgumentException if numFeatures is not positive, eps is negative or momentum is outside [0, 1]
     */
    public SyncBatchNorm(int numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats,
            ProcessGroup processGroup) {
        super(numFeatures, eps, momentum, affine, trackRunningStats);
        this.processGroup = processGroup;
    }

    private SyncBatchNorm(BatchNorm2d source, ProcessGroup processGroup) {
        super(source);
        this.processGroup = processGroup;
    }

    /**
     * Replaces every {@link BatchNorm2d} in module's tree (subclasses too; not SyncBatchNorms) by a
     * SyncBatchNorm on the same parameter and buffer tensors — not copies, so an optimizer already
     * made over them keeps working — with the same options, training flag and requires-grad flags.
     * Mirrors {@code torch.nn.SyncBatchNorm.convert_sync_batchnorm(module, process_group)}: children are
     * replaced in place (same names and order, so {@link #stateDict()} keys do not change) and the
     * module is returned, or the new layer when module is itself a BatchNorm2d. A converted
     * BatchNorm2d still referenced elsewhere (a model's field, a {@link Sequential}'s list) runs its
     * SyncBatchNorm, so no path keeps per-rank statistics. Call it before wrapping the model in
     * DistributedDataParallel, as in PyTorch.
     *
     * @param module a model (not changed when it has no BatchNorm2d)
     * @param processGroup the group to synchronise over, or null for the default group
     * @return module, or its replacement when module is a BatchNorm2d
     */
    public static Module convertSyncBatchnorm(Module module, ProcessGroup processGroup) {
        return convert(module, processGroup, new IdentityHashMap<>());
    }

    /** {@link #convertSyncBatchnorm(Module, ProcessGroup)} on the default group. */
    public static Module convertSyncBatchnorm(Module module) {
        return convertSyncBatchnorm(module, null);
    }

    /** A layer reached twice (shared) becomes one SyncBatchNorm. */
    private static Module convert(Module module, ProcessGroup group, Map<Module, Module> done) {
        Module seen = done.get(module);
        if (seen != null) {
            return seen;
        }
        Module out = module;
        if (module instanceof BatchNorm2d bn && !(module instanceof SyncBatchNorm)) {
            SyncBatchNorm sync = new SyncBatchNorm(bn, group);
            bn.convertedTo(sync);
            out = sync;
        } else {
            for (String name : List.copyOf(module.namedChildren().keySet())) {
                Module child = module.namedChildren().get(name);
                Module converted = convert(child, group, done);
                if (converted != child) {
                    module.replaceChild(name, converted);
                }
            }
        }
        done.put(module, out);
        return out;
    }

    /**
     * The group's statistics in training mode with batch statistics; BatchNorm2d's path otherwise
     * (eval mode with running statistics: no communication) and where there is nothing to
     * synchronise with. Batch norm + ReLU (the ResNet blocks' fused call) is fused here too.
     */
    @Override
    Tensor apply(Tensor input, Tensor mean, Tensor var, boolean training, double factor, boolean relu,
            Tensor residual) {
        // As PyTorch: synchronise only when batch statistics are used in training mode.
        ProcessGroup group = training && isTraining() ? groupToSync() : null;
        if (group == null) {
            return local(input, mean, var, training, factor, relu, residual);
        }
        return relu ? SyncBatchNormFunction.applyRelu(input, weight(), bias(), mean, var, factor, eps(), group, residual)
                : SyncBatchNormFunction.apply(input, weight(), bias(), mean, var, factor, eps(), group);
    }

    /** The group to synchronise over, or null (none initialised, or one rank). */
    private ProcessGroup groupToSync() {
        ProcessGroup group = processGroup;
        if (group == null && Distributed.isInitialized()) {
            group = Distributed.defaultGroup();
        }
        if (group != null && group.size() > 1) {
            return group;
        }
        if (!loggedLocal) {
            loggedLocal = true;
            String why = group == null ? "no process group is initialised" : "the group has one rank";
            LOG.log(Level.DEBUG, () -> "SyncBatchNorm: " + why + ", normalising with this process's batch as BatchNorm2d");
        }
        return null;
    }

    /** BatchNorm2d's computation; [N, C] and [N, C, L...] input runs as [N, C, L, 1]. */
    private Tensor local(Tensor input, Tensor mean, Tensor var, boolean training, double factor, boolean relu,
            Tensor residual) {
        if (input.dim() == 4 || input.dim() < 2) {
            return super.apply(input, mean, var, training, factor, relu, residual);
        }
        long[] shape = input.shape();
        long[] as4 = {shape[0], shape[1], trailing(shape), 1};
        Tensor r = residual == null ? null : residual.reshape(as4);
        return super.apply(input.reshape(as4), mean, var, training, factor, relu, r).reshape(shape);
    }

    private static long trailing(long[] shape) {
        long n = 1;
        for (int d = 2; d < shape.length; d++) {
            n *= shape[d];
        }
        return n;
    }

    /** The group given at construction, or null for the default group. */
    public ProcessGroup processGroup() {
        return processGroup;
    }
}
