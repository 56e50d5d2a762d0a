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
 *
 * <p>As PyTorch, the construction verifies that every rank wraps parameters of the same shapes
 * with the same bucket cap (a {@link DistributedException} names each rank's shapes otherwise);
 * the bucket all-reduces then skip the process group's per-collective size check. After the first
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
    public static final long FIRST_BUCKET_CAP_BYTES = 1L << 20;

    private final Module module;
    private final ProcessGroup group;
    private final long bucketCapBytes;
    /** The parameters that get gradients, in parameter order. */
    private final List<Tensor> params = new ArrayList<>();
    private final Map<Tensor, Integer> paramIndex = new IdentityHashMap<>();
    private final List<GradientBucket> buckets = new ArrayList<>();
    private final Map<Tensor, GradientBucket> bucketOf = new IdentityHashMap<>();
    private int nextToLaunch;
    private boolean finishQueued;
    private boolean syncEnabled = true;
    private boolean overlap = !"0".equals(System.getenv("DDP4J_DDP_OVERLAP"));
    /** Indices into params in the order their gradients became ready in the first synced backward. */
    private List<Integer> readyOrder = new ArrayList<>();
    private boolean readyOrderComplete;
    private boolean bucketsRebuilt;
    private boolean collectivesAtWorldSizeOne;

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
        this.bucketCapBytes = bucketCapBytes;
        for (Tensor p : module.parameters()) {
            if (!p.requiresGrad()) {
                continue;
            }
            if (p.dtype() != DType.FLOAT32) {
                throw new IllegalArgumentException("DistributedDataParallel supports float32 parameters, got " + p.describe());
            }
            checkDevice("parameter", p, group);
            paramIndex.put(p, params.size());
            params.add(p);
        }
        for (Tensor b : module.namedBuffers().values()) {
            checkDevice("buffer", b, group);
        }
        ParameterLayout.verifyAcrossRanks(group, module, params, bucketCapBytes);
        broadcastState(module.stateDict().values());
        List<Integer> reverse = new ArrayList<>();
        for (int i = params.size() - 1; i >= 0; i--) {
            reverse.add(i);
        }
        buildBuckets(reverse);
        for (Tensor p : params) {
            p.registerPostAccumulateGradHook(this::onGradientReady);
        }
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
        return buckets.stream().map(GradientBucket::bytes).toList();
    }

    /** The parameters of each bucket, in launch order (for tests). */
    List<List<Tensor>> bucketParameters() {
        return buckets.stream().map(b -> b.parameters).toList();
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
     * Groups the parameters, taken in {@code order} (indices into params), into buckets under the
     * caps and makes their gradients slices of them; existing gradient values are kept.
     */
    private void buildBuckets(List<Integer> order) {
        List<GradientBucket> old = new ArrayList<>(buckets);
        buckets.clear();
        bucketOf.clear();
        List<Tensor> current = new ArrayList<>();
        long currentBytes = 0;
        for (int index : order) {
            Tensor p = params.get(index);
            long cap = buckets.isEmpty() ? Math.min(FIRST_BUCKET_CAP_BYTES, bucketCapBytes) : bucketCapBytes;
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
        for (GradientBucket b : old) {
            b.flat.close(); // the gradients moved to the new buckets
        }
    }

    private void addBucket(List<Tensor> bucketParams) {
        long numel = 0;
        for (Tensor p : bucketParams) {
            numel += p.numel();
        }
        Tensor flat = Tensor.full(0, DType.FLOAT32, group.device(), numel).keep();
        long offset = 0;
        for (Tensor p : bucketParams) {
            Tensor view = flat.flatSlice(offset, p.shape()).keep();
            if (p.grad() != null) {
                view.copyFrom(p.grad());
                p.grad().close();
            }
            p.setGrad(view);
            offset += p.numel();
        }
        GradientBucket bucket = new GradientBucket(buckets.size(), bucketParams, flat);
        buckets.add(bucket);
        for (Tensor p : bucketParams) {
            bucketOf.put(p, bucket);
        }
    }

    /**
     * Once, after the first synchronised backward: rebuilds the buckets in the order rank 0 saw
     * the gradients become ready. Rank 0's order is broadcast so every rank builds the same layout.
     */
    private void rebuildBucketsOnce() {
        bucketsRebuilt = true;
        long[] order = new long[params.size()];
        boolean[] seen = new boolean[params.size()];
        int n = 0;
        for (int index : readyOrder) {
            if (!seen[index]) {
                seen[index] = true;
                order[n++] = index;
            }
        }
        for (int i = params.size() - 1; i >= 0; i--) { // parameters that got no gradient: last
            if (!seen[i]) {
                order[n++] = i;
            }
        }
        readyOrder = null;
        try (var scope = Tensors.scope()) {
            Tensor t = Tensor.ofLongs(order, order.length).to(group.device());
            group.broadcast(t, 0).await();
            order = t.toLongArray();
        }
        List<Integer> newOrder = new ArrayList<>();
        for (long index : order) {
            newOrder.add((int) index);
        }
        List<Integer> currentOrder = new ArrayList<>();
        for (GradientBucket b : buckets) {
            for (Tensor p : b.parameters) {
                currentOrder.add(paramIndex.get(p));
            }
        }
        if (!newOrder.equals(currentOrder)) {
            buildBuckets(newOrder);
        }
    }

    /**
     * Runs the wrapped module; in training mode first broadcasts its buffers from rank 0 (as
     * PyTorch's {@code broadcast_buffers=True}).
     */
    @Override
    public Tensor forward(Tensor input) {
        if (isTraining() && syncEnabled && Tensors.isGradEnabled() && readyOrderComplete && !bucketsRebuilt) {
            rebuildBucketsOnce();
        }
        // With one rank there is nothing to broadcast or average: skip the collectives.
        if (isTraining() && syncEnabled && communicates()) {
            broadcastState(module.namedBuffers().values());
        }
        return module.forward(input);
    }

    private void onGradientReady(Tensor parameter) {
        if (!syncEnabled || !communicates()) {
            return;
        }
        if (readyOrder != null && !readyOrderComplete) {
            readyOrder.add(paramIndex.get(parameter));
        }
        GradientBucket bucket = bucketOf.get(parameter);
        if (bucket.markReady() && overlap) {
            launchReadyBuckets();
        }
        if (!finishQueued) {
            finishQueued = true;
            Tensors.queueBackwardCallback(this::finishBackward);
        }
    }

    /** Whether this DDP runs collectives: not at world size 1 (nothing to average), unless a test asks. */
    private boolean communicates() {
        return group.size() > 1 || collectivesAtWorldSizeOne;
    }

    /**
     * Runs the bucket all-reduces and buffer broadcasts even at world size 1, where they change
     * nothing: lets a machine with one GPU exercise DDP's whole communication path (tests).
     */
    void setCollectivesAtWorldSizeOne(boolean value) {
        collectivesAtWorldSizeOne = value;
    }

    /** Launches buckets in index order so every rank issues the same collectives in the same order. */
    private void launchReadyBuckets() {
        while (nextToLaunch < buckets.size() && buckets.get(nextToLaunch).isReady()) {
            launchNext();
        }
    }

    /**
     * All-reduces the next bucket. The layout was verified across ranks at construction, so the
     * group's per-collective size check is skipped; the last bucket runs on this thread when the
     * group is idle, since backward waits for it straight away.
     */
    private void launchNext() {
        GradientBucket b = buckets.get(nextToLaunch++);
        b.work = group.allReduceUnchecked(b.flat, ReduceOp.SUM, nextToLaunch == buckets.size());
    }

    /**
     * Whether a bucket's all-reduce starts as soon as its gradients are ready, overlapping the
     * rest of backward (the default), or every bucket is all-reduced after backward (to measure
     * what the overlap saves; the results are the same). Every rank must use the same setting.
     * The environment variable {@code DDP4J_DDP_OVERLAP=0} sets the default to off.
     */
    public void setOverlap(boolean overlap) {
        this.overlap = overlap;
    }

    /** End of backward: launch buckets whose parameters got no gradient, await all, average. */
    private void finishBackward() {
        try {
            while (nextToLaunch < buckets.size()) {
                launchNext();
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
            readyOrderComplete = readyOrder != null;
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
