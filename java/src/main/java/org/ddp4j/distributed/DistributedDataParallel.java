package org.ddp4j.distributed;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * Data-parallel training of a module: PyTorch's {@code torch.nn.parallel.DistributedDataParallel}.
 *
 * <p>At construction it broadcasts the module's parameters and buffers from rank 0, so every rank
 * starts from the same state, and lays out each parameter's gradient as a slice of a flat
 * bucket (reverse parameter order; the first bucket capped at 1 MB, the rest at 25 MB, as
 * PyTorch). During backward, as soon as every gradient of a bucket has been accumulated, the
 * bucket's all-reduce is launched asynchronously while backward continues; buckets launch in
 * index order on every rank so the collectives match, and average on the backend. Before backward
 * returns, all buckets are awaited, so each rank holds the average gradient (the buckets, hooks
 * and waits are the {@link Reducer}'s). In training mode each forward first broadcasts the
 * buffers (e.g. BatchNorm running statistics) from rank 0. Parameter names carry the
 * {@code module.} prefix.
 *
 * <p>As PyTorch, the construction verifies that every rank wraps parameters of the same shapes
 * with the same bucket cap (a {@link DistributedException} names each rank's shapes otherwise).
 * Each bucket all-reduce carries a fingerprint (the group's collective number, op, dtype, size,
 * bucket index): when another rank called something else at that point (a metric all-reduce, a
 * different bucket or model), every rank's {@code backward()} fails with a
 * {@link DistributedException} naming its own call and the peer's, e.g. "allReduce(AVG) of 1,234
 * float32 elements (#57, DDP bucket 2 of 3) on rank 0: a peer called a different collective: rank
 * 1 called allReduce(SUM) of 1 float32 element (#57)", and no rank keeps a wrong gradient. After the first
 * synchronised backward, the buckets are rebuilt once, at the next training forward, in the order
 * in which rank 0 saw the gradients become ready (PyTorch's {@code _rebuild_buckets}), so that the
 * first buckets fill as early as possible. Results do not depend on the bucket layout.
 *
 * <p>Overlap of communication with backward can be turned off with the environment variable
 * {@code DDP4J_DDP_OVERLAP=0}: every bucket is then all-reduced after backward has finished (for
 * measuring what the overlap saves; the results are the same). In a group of one rank there is
 * nothing to average: forward and backward then issue no collectives at all.
 */
public final class DistributedDataParallel extends Module {
    /** PyTorch's defaults: bucket_cap_mb=25 and a 1 MB first bucket. */
    public static final long DEFAULT_BUCKET_CAP_BYTES = 25L << 20;
    public static final long FIRST_BUCKET_CAP_BYTES = Reducer.FIRST_BUCKET_CAP_BYTES;

    private final Module module;
    private final ProcessGroup group;
    private final Reducer reducer;

    /**
     * Wraps {@code module} for training on the default process group.
     *
     * @throws IllegalStateException if {@link Distributed#initProcessGroup} was not called
     */
    public DistributedDataParallel(Module module) {
        this(module, Distributed.defaultGroup(), DEFAULT_BUCKET_CAP_BYTES);
    }

    /**
     * Wraps {@code module} for training on {@code group}.
     *
     * @param bucketCapBytes the most gradient bytes in one bucket (the first bucket holds at most 1 MB)
     * @throws IllegalArgumentException if a parameter is not float32, or a parameter or buffer is
     *     not on the group's device
     * @throws DistributedException if the ranks' parameters differ in shape or bucket cap, or the
     *     broadcast of the initial state fails
     */
    public DistributedDataParallel(Module module, ProcessGroup group, long bucketCapBytes) {
        this.module = registerModule("module", module);
        this.group = group;
        List<Tensor> params = new ArrayList<>();
        for (Tensor p : module.parameters()) {
            if (!p.requiresGrad()) {
                continue;
            }
            if (p.dtype() != DType.FLOAT32) {
                throw new IllegalArgumentException("DistributedDataParallel supports float32 parameters, got " + p.describe());
            }
            checkDevice("parameter", p, group);
            params.add(p);
        }
        for (Tensor b : module.namedBuffers().values()) {
            checkDevice("buffer", b, group);
        }
        ParameterLayout.verifyAcrossRanks(group, module, params, bucketCapBytes);
        broadcastState(module.stateDict().values());
        reducer = new Reducer(params, group, bucketCapBytes);
    }

    /** Parameters and buffers must live where the group's collectives run (Gloo: CPU, NCCL: its GPU). */
    private static void checkDevice(String what, Tensor t, ProcessGroup group) {
        if (!t.device().equals(group.device())) {
            throw new IllegalArgumentException("DistributedDataParallel: a " + what + " is " + t.describe() + " but the "
                    + group.backend() + " group works on " + group.device() + ": call module.to(" + group.device()
                    + ") before wrapping it");
        }
    }

    /** The wrapped module. Mirrors {@code DistributedDataParallel.module}. */
    public Module module() {
        return module;
    }

    /** The process group gradients are averaged over. */
    public ProcessGroup processGroup() {
        return group;
    }

    /** Bucket sizes in bytes, in launch order (for tests and logs). */
    public List<Long> bucketBytes() {
        return reducer.bucketBytes();
    }

    /** The parameters of each bucket, in launch order (for tests). */
    List<List<Tensor>> bucketParameters() {
        return reducer.bucketParameters();
    }

    /**
     * Broadcasts tensors from rank 0, coalesced into one flat tensor per dtype so that a model's
     * many small buffers cost one collective, not one each (as PyTorch's _broadcast_coalesced).
     */
    private void broadcastState(Collection<Tensor> tensors) {
        Map<DType, List<Tensor>> byType = new EnumMap<>(DType.class);
        for (Tensor t : tensors) {
            byType.computeIfAbsent(t.dtype(), k -> new ArrayList<>()).add(t);
        }
        try (var scope = Tensors.scope()) {
            List<Tensor> flats = new ArrayList<>();
            List<Work> works = new ArrayList<>();
            for (Map.Entry<DType, List<Tensor>> group : byType.entrySet()) {
                long numel = group.getValue().stream().mapToLong(Tensor::numel).sum();
                Tensor flat = Tensor.full(0, group.getKey(), this.group.device(), numel);
                copySlices(group.getValue(), flat, true);
                flats.add(flat);
                works.add(this.group.broadcast(flat, 0));
            }
            int i = 0;
            for (Map.Entry<DType, List<Tensor>> group : byType.entrySet()) {
                works.get(i).await();
                copySlices(group.getValue(), flats.get(i), false);
                i++;
            }
        }
    }

    /** Copies each tensor into (or out of) its consecutive slice of flat, in one native call. */
    private static void copySlices(List<Tensor> tensors, Tensor flat, boolean intoFlat) {
        if (intoFlat) {
            Tensors.flattenInto(tensors, flat);
        } else {
            Tensors.unflattenFrom(flat, tensors);
        }
    }

    /**
     * Runs the wrapped module; in training mode first broadcasts its buffers from rank 0 (as
     * PyTorch's {@code broadcast_buffers=True}). The first training forward after the first
     * synchronised backward also rebuilds the gradient buckets in the order gradients became ready.
     */
    @Override
    public Tensor forward(Tensor input) {
        if (isTraining() && Tensors.isGradEnabled()) {
            reducer.rebuildBucketsIfReady();
        }
        // With one rank there is nothing to broadcast or average: skip the collectives.
        if (isTraining() && reducer.isSyncEnabled() && reducer.communicates()) {
            broadcastState(module.namedBuffers().values());
        }
        return module.forward(input);
    }

    /**
     * Runs the bucket all-reduces and buffer broadcasts even at world size 1, where they change
     * nothing: lets a machine with one GPU exercise DDP's whole communication path (tests).
     */
    void setCollectivesAtWorldSizeOne(boolean value) {
        reducer.setCollectivesAtWorldSizeOne(value);
    }

    /**
     * Whether a bucket's all-reduce starts as soon as its gradients are ready, overlapping the
     * rest of backward (the default), or every bucket is all-reduced after backward (to measure
     * what the overlap saves; the results are the same). Every rank must use the same setting.
     * The environment variable {@code DDP4J_DDP_OVERLAP=0} sets the default to off.
     */
    public void setOverlap(boolean overlap) {
        reducer.setOverlap(overlap);
    }

    /**
     * Skips gradient synchronisation until the returned scope closes: gradients accumulate
     * locally and are all-reduced by the first backward after it. Mirrors {@code no_sync()}.
     */
    public NoSync noSync() {
        reducer.setSyncEnabled(false);
        return new NoSync();
    }

    /** The scope returned by {@link #noSync()}. */
    public final class NoSync implements AutoCloseable {
        private NoSync() {}

        @Override
        public void close() {
            reducer.setSyncEnabled(true);
        }
    }

    /** Frees the buckets (the gradients) and the wrapped module. */
    @Override
    public void close() {
        for (Tensor p : module.parameters()) {
            if (p.grad() != null) {
                p.grad().close();
            }
            p.setGrad(null);
        }
        reducer.close();
        super.close();
    }
}
