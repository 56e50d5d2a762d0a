package org.ddp4j.distributed.fsdp;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * The parameters of one fully_shard unit (PyTorch's {@code FSDPParamGroup}): each parameter is
 * split on dim 0 into world-size chunks of {@code ceil(dim0 / worldSize)} rows, the last padded
 * with zeros, and this rank keeps its chunk as a float32 leaf (the shard the optimizer steps).
 * The module keeps its own parameter tensors; their storage is freed while the unit is sharded
 * and comes back, all-gathered, the first time an op reads any of them ({@link Tensor#recomputableBy}),
 * so forward and backward gather a unit exactly when they reach it.
 *
 * <p>One all-gather moves the whole unit: every rank's input is its shards packed back to back
 * ({@code S} elements), and parameter p's rows from rank r sit at {@code [r * S + offset(p), ...)}
 * of the output. Gradients travel the same layout backwards through one reduce-scatter.
 */
final class FSDPParamGroup {
    /** One parameter: the module's tensor (unsharded when gathered) and this rank's shard of it. */
    record ShardedParam(Tensor unsharded, Tensor shard, long rows, long rowsPerShard, long rowNumel, long offset) {
        long shardNumel() {
            return rowsPerShard * rowNumel;
        }

        /** How many of rank r's chunk rows are real (the rest is padding). */
        long realRows(int r) {
            return Math.max(0, Math.min(rowsPerShard, rows - r * rowsPerShard));
        }
    }

    private final List<ShardedParam> params = new ArrayList<>();
    private final Map<Tensor, ShardedParam> byUnsharded = new IdentityHashMap<>();
    private final ProcessGroup group;
    private final int world;
    private final int rank;
    private final DType paramDtype;
    private final DType reduceDtype;
    final boolean reshardAfterForward;
    /** Elements of one rank's packed shards. */
    private final long packedNumel;
    /** The shards' gradients: one flat float32 tensor and a view per parameter, given as grad(). */
    private final Tensor shardGrads;
    private final List<Tensor> shardGradViews = new ArrayList<>();
    private final FSDPModule owner;

    private boolean unsharded;
    /** Parameters whose gradient arrived in the backward now running. */
    private final Map<Tensor, Boolean> ready = new IdentityHashMap<>();

    /**
     * Shards {@code tensors}: rank 0's values are broadcast first (as DistributedDataParallel
     * does), then each rank copies its rows and frees the full storage.
     */
    FSDPParamGroup(FSDPModule owner, List<Tensor> tensors, ProcessGroup group, FullyShardOptions options) {
        this.owner = owner;
        this.group = group;
        this.world = group.size();
        this.rank = group.rank();
        this.reshardAfterForward = options.reshardAfterForward();
        MixedPrecisionPolicy mp = options.mpPolicy();
        long offset = 0;
        for (Tensor t : tensors) {
            if (t.dtype() != DType.FLOAT32) {
                throw new IllegalArgumentException("fullyShard: parameter " + t.describe() + " is not float32; fully_shard "
                        + "keeps float32 shards (set a lower compute precision with MixedPrecisionPolicy.paramDtype)");
            }
            if (t.numel() == 0) {
                throw new IllegalArgumentException("fullyShard: parameter " + t.describe() + " has no elements");
            }
            long rows = t.dim() == 0 ? 1 : t.size(0);
            long rowNumel = t.numel() / rows;
            long perShard = (rows + world - 1) / world;
            params.add(new ShardedParam(t, null, rows, perShard, rowNumel, offset));
            offset += perShard * rowNumel;
        }
        this.packedNumel = offset;
        this.paramDtype = mp.paramDtype() == null ? DType.FLOAT32 : mp.paramDtype();
        this.reduceDtype = mp.reduceDtype() != null ? mp.reduceDtype() : this.paramDtype;
        this.shardGrads = Tensor.zeros(Math.max(1, packedNumel)).keep();
        broadcastFromRankZero(tensors);
        for (int i = 0; i < params.size(); i++) {
            ShardedParam p = params.get(i);
            Tensor shard = Tensor.zeros(shardShape(p.unsharded(), p.rowsPerShard())).keep();
            shard.requiresGrad(p.unsharded().requiresGrad()); // a frozen parameter's shard stays frozen
            ShardedParam sp = new ShardedParam(p.unsharded(), shard, p.rows(), p.rowsPerShard(), p.rowNumel(), p.offset());
            copyOwnRowsToShard(sp);
            params.set(i, sp);
            byUnsharded.put(sp.unsharded(), sp);
            shardGradViews.add(shardGrads.flatSlice(sp.offset(), shard.shape()).keep());
            Tensor u = sp.unsharded();
            u.clearGrad();
            u.recomputableBy(() -> {
                unshard();
                return 0;
            });
            u.registerPostAccumulateGradHook(this::gradientReady);
            u.freeStorage();
        }
    }

    private static long[] shardShape(Tensor t, long rowsPerShard) {
        long[] shape = t.dim() == 0 ? new long[] {1} : t.shape();
        shape[0] = rowsPerShard;
        return shape;
    }

    private void broadcastFromRankZero(List<Tensor> tensors) {
        if (world == 1 || tensors.isEmpty()) {
            return;
        }
        long total = 0;
        for (Tensor t : tensors) {
            total += t.numel();
        }
        try (Tensor flat = Tensor.zeros(total).keep()) {
            Tensors.flattenInto(tensors, flat);
            group.broadcast(flat, 0).await();
            Tensors.unflattenFrom(flat, tensors);
        }
    }

    /** The FSDPModule this unit belongs to. */
    FSDPModule owner() {
        return owner;
    }

    /** Elements of this rank's shards packed together. */
    long packedNumel() {
        return packedNumel;
    }

    List<ShardedParam> params() {
        return params;
    }

    ShardedParam paramOf(Tensor unshardedTensor) {
        return byUnsharded.get(unshardedTensor);
    }

    boolean isUnsharded() {
        return unsharded;
    }

    /** Elements the unit's parameters hold gathered: what unsharding it costs every rank. */
    long unshardedNumel() {
        long n = 0;
        for (ShardedParam p : params) {
            n += p.unsharded().numel();
        }
        return n;
    }

    /**
     * All-gathers the unit: the module's parameters get storage again and the full values. Mirrors
     * {@code FSDPModule.unshard()}.
     */
    void unshard() {
        unshard(paramDtype);
    }

    /** {@link #unshard()} through an all-gather in {@code dtype} (float32 gives the master values). */
    void unshard(DType dtype) {
        if (unsharded || params.isEmpty()) {
            return;
        }
        owner.root().beforeUnshard(this);
        try (Tensor packed = pack(dtype);
                Tensor gathered = Tensor.zeros(dtype, world * packedNumel).keep()) {
            group.allGatherIntoTensor(gathered, packed).await();
            for (ShardedParam p : params) {
                p.unsharded().allocateStorage();
                for (int r = 0; r < world; r++) {
                    long real = p.realRows(r);
                    if (real == 0) {
                        continue;
                    }
                    copy(gathered, r * packedNumel + p.offset(), p.unsharded(), r * p.shardNumel(), real * p.rowNumel());
                }
            }
        }
        unsharded = true;
    }

    /** This rank's shards back to back, in the all-gather's dtype. */
    private Tensor pack(DType dtype) {
        List<Tensor> shards = new ArrayList<>();
        for (ShardedParam p : params) {
            shards.add(p.shard());
        }
        Tensor flat = Tensor.zeros(packedNumel).keep();
        Tensors.flattenInto(shards, flat);
        if (dtype == DType.FLOAT32) {
            return flat;
        }
        try (flat) {
            return flat.to(dtype).keep();
        }
    }

    /** Frees the gathered parameters' storage. Mirrors {@code FSDPModule.reshard()}. */
    void reshard() {
        if (!unsharded) {
            return;
        }
        for (ShardedParam p : params) {
            p.unsharded().freeStorage();
        }
        unsharded = false;
    }

    /** The post-accumulate hook of each gathered parameter: reduces once the unit's last gradient is in. */
    private void gradientReady(Tensor unshardedTensor) {
        owner.root().backwardStarted();
        ready.put(unshardedTensor, Boolean.TRUE);
        if (ready.size() == trainableCount()) {
            postBackward();
        }
    }

    private int trainableCount() {
        int n = 0;
        for (ShardedParam p : params) {
            n += p.unsharded().requiresGrad() ? 1 : 0;
        }
        return n;
    }

    /**
     * Forgets a backward that did not finish (it threw): the gradients that had arrived, and the
     * unsharded gradients unless they are an accumulation the caller meant to keep.
     */
    void resetBackward(boolean keepUnshardedGradients) {
        ready.clear();
        if (!keepUnshardedGradients) {
            clearUnshardedGradients();
        }
    }

    /** Drops the gradients accumulated on the gathered parameters (sync off) without reducing them. */
    void clearUnshardedGradients() {
        for (ShardedParam p : params) {
            p.unsharded().clearGrad();
        }
    }

    /** Whether some gradient arrived in this backward that {@link #postBackward()} has not reduced yet. */
    boolean hasPendingGradients() {
        return !ready.isEmpty();
    }

    /**
     * Reduce-scatters the unit's gradients (when gradient sync is on) into the shards' grad() and
     * frees the gathered parameters; the unsharded gradients are kept for the next backward when
     * sync is off (FSDP2's {@code set_requires_gradient_sync(False)}).
     */
    void postBackward() {
        ready.clear();
        reshard(); // every gradient is in: the gathered values are not read again, and the reduction needs the room
        if (owner.root().requiresGradientSync()) {
            reduceScatterGradients();
        }
    }

    /**
     * One reduce-scatter of the unit's gradients. Each rank's block carries, after its gradient
     * rows, one flag per parameter: 1 where this rank had a gradient. Summed, a flag says whether
     * any rank had one, so a parameter that got a gradient on some rank gets the average on every
     * rank, and one no rank used (or a frozen one) keeps no gradient, as without sharding.
     */
    private void reduceScatterGradients() {
        boolean any = false;
        for (ShardedParam p : params) {
            any |= p.unsharded().grad() != null;
        }
        if (!any) {
            return;
        }
        long block = packedNumel + params.size();
        try (Tensor input = Tensor.zeros(reduceDtype, world * block).keep();
                Tensor output = Tensor.zeros(reduceDtype, block).keep()) {
            for (int i = 0; i < params.size(); i++) {
                ShardedParam p = params.get(i);
                Tensor g = p.unsharded().grad();
                if (g == null) {
                    continue;
                }
                for (int r = 0; r < world; r++) {
                    try (Tensor flag = input.flatSlice(r * block + packedNumel + i, 1)) {
                        flag.fill(1);
                    }
                    long real = p.realRows(r);
                    if (real == 0) {
                        continue;
                    }
                    copy(g, r * p.shardNumel(), input, r * block + p.offset(), real * p.rowNumel());
                }
                p.unsharded().clearGrad();
            }
            group.reduceScatterTensor(output, input, ReduceOp.AVG).await();
            float[] used;
            try (Tensor flags = output.flatSlice(packedNumel, params.size())) {
                used = flags.toFloatArray();
            }
            for (int i = 0; i < params.size(); i++) {
                if (used[i] == 0) {
                    continue;
                }
                ShardedParam p = params.get(i);
                Tensor view = shardGradViews.get(i);
                Tensor shard = p.shard();
                try (Tensor reduced = output.flatSlice(p.offset(), shard.shape())) {
                    if (shard.grad() == null) {
                        view.copyFrom(reduced);
                        shard.setGrad(view);
                    } else if (reduceDtype == DType.FLOAT32) {
                        shard.grad().addInPlace(reduced, 1f);
                    } else {
                        try (Tensor wide = reduced.to(DType.FLOAT32).keep()) {
                            shard.grad().addInPlace(wide, 1f);
                        }
                    }
                }
            }
        }
    }

    /** Copies the gathered parameters' rows back into the shards (after a state dict was loaded into them). */
    void writeBackShards() {
        params.forEach(this::copyOwnRowsToShard);
    }

    /** This rank's rows of the gathered parameter into its shard. */
    private void copyOwnRowsToShard(ShardedParam p) {
        long real = p.realRows(rank);
        if (real > 0) {
            copy(p.unsharded(), rank * p.shardNumel(), p.shard(), 0, real * p.rowNumel());
        }
    }

    /** Copies n elements of src's flat data from srcAt into dst's from dstAt (converting dtypes). */
    private static void copy(Tensor src, long srcAt, Tensor dst, long dstAt, long n) {
        try (Tensor to = dst.flatSlice(dstAt, n); Tensor from = src.flatSlice(srcAt, n)) {
            to.copyFrom(from);
        }
    }

    /** Frees the shards, their gradients and the unsharded gradients (the module closes its own tensors). */
    void close() {
        for (ShardedParam p : params) {
            p.unsharded().clearGrad();
            p.shard().close();
        }
        shardGradViews.forEach(Tensor::close);
        shardGrads.close();
    }

    @Override
    public String toString() {
        return "FSDPParamGroup(" + params.size() + " parameters, " + packedNumel + " elements per rank)";
    }
}
