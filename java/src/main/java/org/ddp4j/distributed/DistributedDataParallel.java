package org.ddp4j.distributed;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumMap;
import java.util.IdentityHashMap;
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
 * index order on every rank so the collectives match. Before backward returns, all buckets are
 * awaited and divided by the world size, so each rank holds the average gradient. In training
 * mode each forward first broadcasts the buffers (e.g. BatchNorm running statistics) from rank 0.
 * Parameter names carry the {@code module.} prefix.
 */
public final class DistributedDataParallel extends Module {
    /** PyTorch's defaults: bucket_cap_mb=25 and a 1 MB first bucket. */
    public static final long DEFAULT_BUCKET_CAP_BYTES = 25L << 20;
    public static final long FIRST_BUCKET_CAP_BYTES = 1L << 20;

    private final Module module;
    private final ProcessGroup group;
    private final List<GradientBucket> buckets = new ArrayList<>();
    private final Map<Tensor, GradientBucket> bucketOf = new IdentityHashMap<>();
    private int nextToLaunch;
    private boolean finishQueued;
    private boolean syncEnabled = true;

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
     * @throws DistributedException if the broadcast of the initial state fails (e.g. the ranks'
     *     modules have different shapes)
     */
    public DistributedDataParallel(Module module, ProcessGroup group, long bucketCapBytes) {
        this.module = registerModule("module", module);
        this.group = group;
        broadcastState(module.stateDict().values());
        buildBuckets(bucketCapBytes);
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
        return buckets.stream().map(GradientBucket::bytes).toList();
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
                Tensor flat = Tensor.full(0, group.getKey(), Device.CPU, numel);
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

    /** Copies each tensor into (or out of) its consecutive slice of flat. */
    private static void copySlices(List<Tensor> tensors, Tensor flat, boolean intoFlat) {
        long offset = 0;
        for (Tensor t : tensors) {
            try (Tensor slice = flat.flatSlice(offset, t.shape())) {
                if (intoFlat) {
                    slice.copyFrom(t);
                } else {
                    t.copyFrom(slice);
                }
            }
            offset += t.numel();
        }
    }

    /** Groups parameters (reverse order) into buckets and makes their gradients slices of them. */
    private void buildBuckets(long capBytes) {
        List<Tensor> params = new ArrayList<>(module.parameters());
        Collections.reverse(params);
        List<Tensor> current = new ArrayList<>();
        long currentBytes = 0;
        for (Tensor p : params) {
            if (!p.requiresGrad()) {
                continue;
            }
            if (p.dtype() != DType.FLOAT32) {
                throw new IllegalArgumentException("DistributedDataParallel supports float32 parameters, got " + p.describe());
            }
            long cap = buckets.isEmpty() ? Math.min(FIRST_BUCKET_CAP_BYTES, capBytes) : capBytes;
            if (!current.isEmpty() && currentBytes + p.numel() * 4 > cap) {
                addBucket(current);
                current = new ArrayList<>();
                currentBytes = 0;
            }
            current.add(p);
            currentBytes += p.numel() * 4;
        }
        if (!current.isEmpty()) {
            addBucket(current);
        }
    }

    private void addBucket(List<Tensor> params) {
        long numel = 0;
        for (Tensor p : params) {
            numel += p.numel();
        }
        Tensor flat = Tensor.zeros(numel).keep();
        long offset = 0;
        for (Tensor p : params) {
            Tensor view = flat.flatSlice(offset, p.shape());
            if (p.grad() != null) {
                view.copyFrom(p.grad());
                p.grad().close();
            }
            p.setGrad(view);
            offset += p.numel();
        }
        GradientBucket bucket = new GradientBucket(buckets.size(), params, flat);
        buckets.add(bucket);
        for (Tensor p : params) {
            bucketOf.put(p, bucket);
            p.registerPostAccumulateGradHook(this::onGradientReady);
        }
    }

    /**
     * Runs the wrapped module; in training mode first broadcasts its buffers from rank 0 (as
     * PyTorch's {@code broadcast_buffers=True}).
     */
    @Override
    public Tensor forward(Tensor input) {
        if (isTraining() && syncEnabled) {
            broadcastState(module.namedBuffers().values());
        }
        return module.forward(input);
    }

    private void onGradientReady(Tensor parameter) {
        if (!syncEnabled) {
            return;
        }
        GradientBucket bucket = bucketOf.get(parameter);
        if (bucket.markReady()) {
            launchReadyBuckets();
        }
        if (!finishQueued) {
            finishQueued = true;
            Tensors.queueBackwardCallback(this::finishBackward);
        }
    }

    /** Launches buckets in index order so every rank issues the same collectives in the same order. */
    private void launchReadyBuckets() {
        while (nextToLaunch < buckets.size() && buckets.get(nextToLaunch).isReady()) {
            GradientBucket b = buckets.get(nextToLaunch++);
            b.work = group.allReduce(b.flat, ReduceOp.SUM);
        }
    }

    /** End of backward: launch buckets whose parameters got no gradient, await all, average. */
    private void finishBackward() {
        try {
            while (nextToLaunch < buckets.size()) {
                GradientBucket b = buckets.get(nextToLaunch++);
                b.work = group.allReduce(b.flat, ReduceOp.SUM);
            }
            float inverseWorld = 1f / group.size();
            for (GradientBucket b : buckets) {
                b.work.await();
                b.flat.mulInPlace(inverseWorld);
            }
        } finally {
            for (GradientBucket b : buckets) {
                b.reset();
            }
            nextToLaunch = 0;
            finishQueued = false;
        }
    }

    /**
     * Skips gradient synchronisation until the returned scope closes: gradients accumulate
     * locally and are all-reduced by the first backward after it. Mirrors {@code no_sync()}.
     */
    public NoSync noSync() {
        syncEnabled = false;
        return new NoSync();
    }

    /** The scope returned by {@link #noSync()}. */
    public final class NoSync implements AutoCloseable {
        private NoSync() {}

        @Override
        public void close() {
            syncEnabled = true;
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
        for (GradientBucket b : buckets) {
            b.flat.close();
        }
        super.close();
    }
}
