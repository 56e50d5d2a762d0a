package org.ddp4j.distributed;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * DDP's gradient reducer: the buckets, the hooks that launch their all-reduces while backward is
 * still running, and the wait at the end of backward. Mirrors c10d's {@code Reducer}.
 *
 * <p>Each parameter's gradient is a slice of a flat float32 bucket (reverse parameter order; the
 * first bucket capped at 1 MB, the rest at the bucket cap), so a bucket's all-reduce needs no
 * copy. A post-accumulate hook on every parameter marks its bucket; a bucket whose gradients are
 * all accumulated is all-reduced with {@link ReduceOp#AVG} (the backend averages: Gloo on its
 * worker thread, NCCL with {@code ncclAvg}) as soon as every lower-numbered bucket has been
 * launched, so every rank issues the same collectives in the same order. A callback queued on the
 * first hook of a backward launches what is left and awaits every bucket before
 * {@code backward()} returns.
 *
 * <p>After the first synchronised backward the buckets are rebuilt once, in the order in which
 * rank 0 saw the gradients become ready (PyTorch's {@code _rebuild_buckets}), so that the first
 * buckets fill as early as possible; rank 0 broadcasts that order so every rank builds the same
 * layout. Results do not depend on the layout. Not thread-safe: one training thread per rank.
 */
final class Reducer implements AutoCloseable {
    /** PyTorch's first bucket: 1 MB, so the first all-reduce starts early in backward. */
    static final long FIRST_BUCKET_CAP_BYTES = 1L << 20;

    private final ProcessGroup group;
    private final long bucketCapBytes;
    /** The parameters that get gradients, in parameter order. */
    private final List<Tensor> params;
    private final Map<Tensor, Integer> paramIndex = new IdentityHashMap<>();
    private final List<GradientBucket> buckets = new ArrayList<>();
    private final Map<Tensor, GradientBucket> bucketOf = new IdentityHashMap<>();
    private int nextToLaunch;
    private boolean finishQueued;
    private boolean syncEnabled = true;
    private boolean overlap = !"0".equals(System.getenv("DDP4J_DDP_OVERLAP"));
    private boolean collectivesAtWorldSizeOne;
    /** Indices into params in the order their gradients became ready in the first synced backward. */
    private List<Integer> readyOrder = new ArrayList<>();
    private boolean readyOrderComplete;
    private boolean bucketsRebuilt;

    /**
     * Lays out the gradients of {@code params} in buckets on the group's device and registers the
     * hooks. Existing gradient values are kept (copied into the buckets).
     *
     * @param params float32 parameters on the group's device, in parameter order
     * @param bucketCapBytes the most gradient bytes in one bucket after the first
     */
    Reducer(List<Tensor> params, ProcessGroup group, long bucketCapBytes) {
        this.params = List.copyOf(params);
        this.group = group;
        this.bucketCapBytes = bucketCapBytes;
        for (int i = 0; i < this.params.size(); i++) {
            paramIndex.put(this.params.get(i), i);
        }
        List<Integer> reverse = new ArrayList<>();
        for (int i = this.params.size() - 1; i >= 0; i--) {
            reverse.add(i);
        }
        buildBuckets(reverse);
        for (Tensor p : this.params) {
            p.registerPostAccumulateGradHook(this::onGradientReady);
        }
    }

    /** Bucket sizes in bytes, in launch order. */
    List<Long> bucketBytes() {
        return buckets.stream().map(GradientBucket::bytes).toList();
    }

    /** The parameters of each bucket, in launch order. */
    List<List<Tensor>> bucketParameters() {
        return buckets.stream().map(b -> b.parameters).toList();
    }

    /** Whether backward all-reduces gradients; false inside DDP's {@code noSync()}. */
    boolean isSyncEnabled() {
        return syncEnabled;
    }

    void setSyncEnabled(boolean enabled) {
        syncEnabled = enabled;
    }

    /** See {@link DistributedDataParallel#setOverlap(boolean)}. */
    void setOverlap(boolean overlap) {
        this.overlap = overlap;
    }

    /** Whether collectives run: not at world size 1 (nothing to average), unless a test asks. */
    boolean communicates() {
        return group.size() > 1 || collectivesAtWorldSizeOne;
    }

    void setCollectivesAtWorldSizeOne(boolean value) {
        collectivesAtWorldSizeOne = value;
    }

    /**
     * Called at a training forward with gradients enabled: once the first synchronised backward
     * has recorded the ready order, rebuilds the buckets in it (one collective, once).
     */
    void rebuildBucketsIfReady() {
        if (syncEnabled && readyOrderComplete && !bucketsRebuilt) {
            rebuildBucketsOnce();
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
     * Rebuilds the buckets in the order rank 0 saw the gradients become ready. Rank 0's order is
     * broadcast so every rank builds the same layout.
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

    /** The post-accumulate hook of every parameter: marks its bucket, launches what is ready. */
    private void onGradientReady(Tensor parameter) {
        if (!syncEnabled || !communicates()) {
            return;
        }
        if (readyOrder != null && !readyOrderComplete) {
            readyOrder.add(paramIndex.get(parameter));
        }
        GradientBucket bucket = bucketOf.get(parameter);
        if (bucket.markReady() && overlap) {
            try {
                launchReadyBuckets();
            } catch (RuntimeException e) {
                // Backward stops here and its queued callbacks are dropped: start the next one clean.
                resetForNextBackward();
                throw e;
            }
        }
        if (!finishQueued) {
            finishQueued = true;
            Tensors.queueBackwardCallback(this::finishBackward);
        }
    }

    /** Launches buckets in index order so every rank issues the same collectives in the same order. */
    private void launchReadyBuckets() {
        while (nextToLaunch < buckets.size() && buckets.get(nextToLaunch).isReady()) {
            launchNext();
        }
    }

    /**
     * Averages the next bucket over the ranks. Its fingerprint (bucket index and count, size, op)
     * travels with the data instead of a check round trip first, so a rank whose peer called another
     * collective fails naming both; the last bucket runs on this thread when the group is idle,
     * since backward waits for it straight away.
     */
    private void launchNext() {
        GradientBucket b = buckets.get(nextToLaunch++);
        b.work = group.allReduceUnchecked(b.flat, ReduceOp.AVG, nextToLaunch == buckets.size(), b.index,
                buckets.size());
    }

    /** End of backward: launch buckets whose parameters got no gradient, then await all. */
    private void finishBackward() {
        try {
            while (nextToLaunch < buckets.size()) {
                launchNext();
            }
            for (GradientBucket b : buckets) {
                b.work.await();
            }
        } finally {
            resetForNextBackward();
            readyOrderComplete = readyOrder != null;
        }
    }

    /** Every bucket's gradients outstanding again, nothing launched, no end-of-backward queued. */
    private void resetForNextBackward() {
        for (GradientBucket b : buckets) {
            b.reset();
        }
        nextToLaunch = 0;
        finishQueued = false;
    }

    /** Frees the buckets, which are the parameters' gradients. */
    @Override
    public void close() {
        for (GradientBucket b : buckets) {
            b.flat.close();
        }
    }
}
