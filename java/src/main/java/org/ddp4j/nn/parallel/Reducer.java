package org.ddp4j.nn.parallel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.distributed.CollectiveMismatchException;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.ExitMarks;
import org.ddp4j.distributed.PeerLostException;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.distributed.algorithms.ddpcommhooks.CommHook;
import org.ddp4j.distributed.algorithms.ddpcommhooks.DefaultHooks;
import org.ddp4j.distributed.algorithms.ddpcommhooks.PowerSGDState;
import org.ddp4j.internal.Setting;

/**
 * DDP's gradient reducer: the buckets, the hooks that launch their all-reduces while backward is
 * still running, and the wait at the end of backward. Mirrors c10d's {@code Reducer}.
 *
 * <p>Each parameter's gradient is a slice of a flat float32 bucket (reverse parameter order; the
 * first bucket closed once it holds 1 MB, the rest at the bucket cap, each possibly overshooting by
 * its last parameter as in PyTorch), so a bucket's all-reduce needs no
 * copy. A post-accumulate hook on every parameter marks its bucket; a bucket whose gradients are
 * all accumulated is all-reduced with {@link ReduceOp#AVG} (the backend averages: Gloo on its
 * worker thread, NCCL with {@code ncclAvg}) as soon as every lower-numbered bucket has been
 * launched, so every rank issues the same collectives in the same order. A callback queued on the
 * first hook of a backward launches what is left and awaits every bucket before
 * {@code backward()} returns.
 *
 * <p>Unused parameters are found for free: the hooks that did not fire by the end of backward are
 * the parameters this rank did not use. Each bucket carries one "used" flag per parameter in its
 * own all-reduce (see {@link ReducerBucket}); a parameter no rank used gets no gradient
 * ({@code grad()} null, so optimizers skip it), one used by some ranks gets the average with zeros
 * from the others: PyTorch's {@code find_unused_parameters=True} result, with no graph walk. The
 * flags are read back only on a rank that itself left a parameter of the bucket unused. While a
 * {@link Join} is open, the same all-reduce carries a "still training" flag.
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
    private final List<ReducerBucket> buckets = new ArrayList<>();
    private final Map<Tensor, ReducerBucket> bucketOf = new IdentityHashMap<>();
    /** Each parameter's position in its bucket. */
    private final Map<Tensor, Integer> slotOf = new IdentityHashMap<>();
    private int nextToLaunch;
    private boolean finishQueued;
    private boolean syncEnabled = true;
    private boolean overlap;
    private boolean collectivesAtWorldSizeOne;
    /** Indices into params in the order their gradients became ready in the first synced backward. */
    private List<Integer> readyOrder = new ArrayList<>();
    private boolean readyOrderComplete;
    private boolean bucketsRebuilt;
    /** The registered communication hook and its state; null: the built-in all-reduce (flags in the same message). */
    private CommHook<Object> hook;
    private Object hookState;
    private boolean hookRegistered;
    /** Whether a synchronised backward (or a join's shadow of one) has started: hooks are registered before. */
    private boolean started;
    /** A forward of the DDP wrapper with gradients enabled ran since the last backward began. */
    private boolean forwardSinceBackward;
    /** A backward is under way: its first hook fired, and a callback at its end clears this. */
    private boolean inBackward;
    /** Whether a join() is open on the model (DistributedDataParallel sets it): failures then get another hint. */
    private boolean insideJoin;

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
        this.overlap = Setting.DDP_OVERLAP.flag(System.getenv(), true);
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
        if (group.size() > 1) {
            ExitMarks.publishNote(group, HOOK_NOTE, hookName()); // registerCommHook replaces it
        }
    }

    /** Bucket sizes in bytes, in launch order. */
    List<Long> bucketBytes() {
        return buckets.stream().map(ReducerBucket::bytes).toList();
    }

    /** Elements each bucket all-reduces (gradients and flags), in launch order. */
    List<Long> bucketNumel() {
        return buckets.stream().map(b -> b.flat.numel()).toList();
    }

    /** The parameters of each bucket, in launch order. */
    List<List<Tensor>> bucketParameters() {
        return buckets.stream().map(b -> b.parameters).toList();
    }

    /** See {@link DistributedDataParallel#registerCommHook}. */
    @SuppressWarnings("unchecked")
    <S> void registerCommHook(S state, CommHook<S> commHook) {
        if (commHook == null) {
            throw new IllegalArgumentException("registerCommHook: the hook is null; pass one, e.g."
                    + " DefaultHooks.BF16_COMPRESS or PowerSGD.POWER_SGD");
        }
        if (hookRegistered) {
            throw new IllegalStateException("registerCommHook can only be called once: this DDP model already has a"
                    + " communication hook; register one hook (combine what you need in it) on a fresh"
                    + " DistributedDataParallel");
        }
        if (started) {
            throw new IllegalStateException("registerCommHook must be called before the first backward (training"
                    + " has started on this DDP model); register the hook right after constructing"
                    + " DistributedDataParallel");
        }
        hookRegistered = true;
        hookState = state;
        // DDP's own average on its own group is the built-in path: flags in the same message, no extra cost.
        boolean builtin = commHook == DefaultHooks.ALLREDUCE && state == group;
        hook = builtin ? null : (CommHook<Object>) commHook;
        ExitMarks.publishNote(group, HOOK_NOTE, hookName());
    }

    /** The registered hook's state (null when none was registered). */
    Object commHookState() {
        return hookState;
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
     * has recorded the ready order, rebuilds the buckets in it (one collective, once). With
     * {@code hintJoin} (not inside join()) a failed collective suggests join() for uneven inputs.
     */
    void rebuildBucketsIfReady(boolean hintJoin) {
        if (syncEnabled && readyOrderComplete && !bucketsRebuilt) {
            try {
                rebuildBucketsOnce();
            } catch (RuntimeException e) {
                // At the second forward: where a rank with one batch fewer than the others is already gone.
                throw hintJoin ? withJoinHint(e) : e;
            }
        }
    }

    /**
     * Groups the parameters, taken in {@code order} (indices into params), into buckets under the
     * caps and makes their gradients slices of them; existing gradient values are kept.
     */
    private void buildBuckets(List<Integer> order) {
        // An old bucket is freed as soon as its last gradient has moved: a rebuild then needs about
        // one bucket more than the gradients, not a second copy of them all (GPT-2 large: 3 GB a rank).
        Map<Tensor, ReducerBucket> oldBucketOf = new IdentityHashMap<>(bucketOf);
        Map<ReducerBucket, Integer> notMoved = new IdentityHashMap<>();
        for (ReducerBucket b : buckets) {
            notMoved.put(b, b.parameters.size());
        }
        buckets.clear();
        bucketOf.clear();
        List<Tensor> current = new ArrayList<>();
        long currentBytes = 0;
        for (int index : order) {
            Tensor p = params.get(index);
            // PyTorch's compute_bucket_assignment_by_size: a bucket closes once it reaches its cap,
            // so it may overshoot by its last parameter (same layouts as PyTorch's for the same cap).
            long cap = buckets.isEmpty() ? Math.min(FIRST_BUCKET_CAP_BYTES, bucketCapBytes) : bucketCapBytes;
            current.add(p);
            currentBytes += p.numel() * 4;
            if (currentBytes >= cap) {
                addBucket(current);
                freeEmptied(current, oldBucketOf, notMoved);
                current = new ArrayList<>();
                currentBytes = 0;
            }
        }
        if (!current.isEmpty()) {
            addBucket(current);
            freeEmptied(current, oldBucketOf, notMoved);
        }
    }

    /** Closes the old buckets whose every gradient has now moved to a new bucket. */
    private static void freeEmptied(List<Tensor> moved, Map<Tensor, ReducerBucket> oldBucketOf,
            Map<ReducerBucket, Integer> notMoved) {
        for (Tensor p : moved) {
            ReducerBucket old = oldBucketOf.get(p);
            if (old != null && notMoved.merge(old, -1, Integer::sum) == 0) {
                old.close();
            }
        }
    }

    /**
     * A parameter without a gradient keeps none (its slice stays zero until autograd gives it
     * one, see {@link #adoptGradient}), as PyTorch's grad is None before the first backward.
     */
    private void addBucket(List<Tensor> bucketParams) {
        long numel = 0;
        for (Tensor p : bucketParams) {
            numel += p.numel();
        }
        // The gradients, then one used flag per parameter and the still-training flag.
        Tensor flat = Tensor.full(0, DType.FLOAT32, group.device(), numel + bucketParams.size() + 1).keep();
        long offset = 0;
        List<Tensor> views = new ArrayList<>();
        for (int slot = 0; slot < bucketParams.size(); slot++) {
            Tensor p = bucketParams.get(slot);
            Tensor view = flat.flatSlice(offset, p.shape()).keep();
            if (p.grad() != null) {
                view.copyFrom(p.grad());
                p.grad().close();
                p.setGrad(view);
            }
            views.add(view);
            slotOf.put(p, slot);
            offset += p.numel();
        }
        ReducerBucket bucket = new ReducerBucket(buckets.size(), bucketParams, flat, views, numel);
        buckets.add(bucket);
        for (Tensor p : bucketParams) {
            bucketOf.put(p, bucket);
        }
    }

    /**
     * Keeps the gradient a slice of the bucket: when the parameter had no gradient (unused
     * everywhere in the last step, or never used), autograd made a new tensor; its values move
     * into the slice, which was zero, and the slice becomes the gradient again.
     */
    private static void adoptGradient(Tensor parameter, Tensor view) {
        Tensor grad = parameter.grad();
        if (grad != view) {
            view.copyFrom(grad);
            grad.close();
            parameter.setGrad(view);
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
        for (ReducerBucket b : buckets) {
            for (Tensor p : b.parameters) {
                currentOrder.add(paramIndex.get(p));
            }
        }
        if (!newOrder.equals(currentOrder)) {
            buildBuckets(newOrder);
        }
    }

    /**
     * Under a communication hook, the buckets are rebuilt in the ready order at the end of the
     * first synchronised backward (or a join's first shadow of one: the same iteration on every
     * rank), before any hook call, instead of at the next forward: so a hook only ever sees the
     * final layout, and per-bucket hook state (PowerSGD's error feedback and warm-start memory,
     * laid out as the bucket) means the same after a resume from a checkpoint as in the run that
     * saved it. The gradients and which parameters this rank used move to the new buckets.
     */
    private void rebuildBeforeFirstHook() {
        if (hook == null || bucketsRebuilt) {
            return;
        }
        List<Tensor> used = new ArrayList<>();
        for (ReducerBucket b : buckets) {
            for (int slot = 0; slot < b.parameters.size(); slot++) {
                if (b.usedLocally(slot)) {
                    used.add(b.parameters.get(slot));
                }
            }
        }
        if (readyOrder == null) {
            readyOrder = new ArrayList<>();
        }
        rebuildBucketsOnce();
        for (Tensor p : used) {
            bucketOf.get(p).markUsed(slotOf.get(p));
        }
    }

    /** Called by every forward of the DDP wrapper with gradients enabled: a backward may follow. */
    void markForward() {
        forwardSinceBackward = true;
        inBackward = false; // a backward that failed midway never ran its end-of-backward callback
    }

    /**
     * At the first hook of a backward: refuses a backward with no DDP forward since the last one.
     * It would add every gradient a second time and all-reduce the buckets again, one step ahead
     * of ranks that did not, silently mixing their steps.
     */
    private void checkBackwardFollowsForward() {
        if (inBackward) {
            return;
        }
        if (!forwardSinceBackward) {
            throw new IllegalStateException("DistributedDataParallel: backward() reached the model's parameters with no"
                    + " forward of the DDP wrapper since the last backward: either a second backward through the same"
                    + " forward (run the forward again first; PyTorch refuses it too), or a forward through"
                    + " model.module() directly (call the DDP model's forward, which the gradient synchronisation needs)");
        }
        inBackward = true;
        forwardSinceBackward = false;
        Tensors.queueBackwardCallback(() -> inBackward = false);
    }

    /** The post-accumulate hook of every parameter: marks its bucket, launches what is ready. */
    private void onGradientReady(Tensor parameter) {
        checkBackwardFollowsForward();
        ReducerBucket bucket = bucketOf.get(parameter);
        int slot = slotOf.get(parameter);
        adoptGradient(parameter, bucket.views.get(slot));
        bucket.markUsed(slot); // inside noSync too: a use there counts at the next sync, as PyTorch
        if (!syncEnabled) {
            return;
        }
        if (!communicates()) {
            queueFinish();
            return;
        }
        if (readyOrder != null && !readyOrderComplete) {
            readyOrder.add(paramIndex.get(parameter));
        }
        // Under a hook the first synchronised backward launches nothing early: its buckets are
        // rebuilt at its end, before the hook sees any (see rebuildBeforeFirstHook).
        if (bucket.markReady() && overlap && (hook == null || bucketsRebuilt)) {
            try {
                launchReadyBuckets();
            } catch (RuntimeException e) {
                // Backward stops here and its queued callbacks are dropped: start the next one clean.
                resetForNextBackward();
                throw withJoinHint(e);
            }
        }
        queueFinish();
    }

    private void queueFinish() {
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
        ReducerBucket b = buckets.get(nextToLaunch++);
        // A parameter this rank left without a gradient contributes zeros, as PyTorch's reducer: its
        // slice may still hold an old gradient when zeroGrad(true) dropped it since (set_to_none).
        for (int slot = 0; slot < b.parameters.size(); slot++) {
            if (b.parameters.get(slot).grad() == null) {
                b.views.get(slot).fill(0);
            }
        }
        b.writeFlags(true);
        launch(b, nextToLaunch == buckets.size());
    }

    /**
     * Starts bucket b's reduction: the built-in all-reduce of gradients and flags together, or the
     * hook on the gradients followed by an all-reduce of the flags alone (so that unused
     * parameters and join keep working under any hook).
     */
    private void launch(ReducerBucket b, boolean last) {
        started = true;
        if (hook == null) {
            b.work = group.allReduceBucket(b.flat, ReduceOp.AVG, last, b.index, buckets.size());
            return;
        }
        b.future = hook.apply(hookState, b.hookView(b.index == buckets.size() - 1));
        b.work = group.allReduceBucket(b.flags, ReduceOp.AVG, false, b.index, buckets.size());
    }

    /**
     * Waits for bucket b's reduction. Under a hook its future is waited for first (its callbacks,
     * and the collectives they issue, run here: in bucket order on every rank) and the result
     * copied into the bucket when the hook returned another tensor.
     */
    private void await(ReducerBucket b) {
        if (b.future != null) {
            Tensor result = b.future.value();
            Tensor gradients = b.gradients();
            if (result != gradients) {
                if (result == null || result.numel() != gradients.numel()) {
                    throw new IllegalStateException("the communication hook's future for bucket " + b.index
                            + " completed with " + (result == null ? "null" : result.describe()) + "; it must give"
                            + " the reduced bucket: a float32 tensor of " + gradients.numel() + " elements");
                }
                gradients.copyFrom(result);
            }
        }
        b.work.await();
    }

    /**
     * End of backward: launch buckets whose parameters got no gradient, await all, then take the
     * gradient away from parameters that no rank used. A failed all-reduce is rethrown with a
     * hint at {@link DistributedDataParallel#join()}, the usual cause of a rank missing, unless the
     * peer's process was killed or crashed.
     */
    private void finishBackward() {
        try {
            if (communicates()) {
                rebuildBeforeFirstHook();
                while (nextToLaunch < buckets.size()) {
                    launchNext();
                }
                for (ReducerBucket b : buckets) {
                    await(b);
                }
                readyOrderComplete = readyOrder != null;
            }
            for (ReducerBucket b : buckets) {
                if (!b.allUsedLocally()) {
                    applyUsage(b, communicates() ? b.flags.toFloatArray() : null);
                }
            }
        } catch (RuntimeException e) {
            throw withJoinHint(e);
        } finally {
            resetForNextBackward();
        }
    }

    /** Appended to a failed bucket all-reduce: the usual reason a peer is elsewhere is uneven inputs. */
    static final String JOIN_HINT = CollectiveMismatchException.UNEVEN_INPUTS_HINT;

    /** Appended to a collective mismatch inside join(). */
    static final String INSIDE_JOIN_HINT = ". Inside ddp.join(), the ranks that ran out of data shadow DDP's own"
            + " collectives only (the buffer broadcast and the gradient buckets): a model whose forward or backward"
            + " makes collectives of its own (SyncBatchNorm, a metric all-reduce) cannot train with uneven inputs under"
            + " join(), as in PyTorch; give every rank the same number of batches (DistributedSampler pads) instead";

    /**
     * A collective mismatch inside join(), where the loop is in a join already: explained with
     * {@link #INSIDE_JOIN_HINT}; anything else (a timeout, a lost peer) unchanged.
     */
    static RuntimeException insideJoinHint(RuntimeException e) {
        if (e instanceof CollectiveMismatchException m && !INSIDE_JOIN_HINT.equals(m.hint())) {
            return m.explained(null, INSIDE_JOIN_HINT);
        }
        return e;
    }

    void setInsideJoin(boolean value) {
        insideJoin = value;
    }

    /** How long the reducer waits for the store to say whether a closed peer left its exit mark. */
    private static final Duration EXIT_MARK_WAIT = Duration.ofSeconds(2);

    /** Appended when a peer's connection closed and it left no exit mark: it was killed or crashed. */
    static final String KILLED_OVER_TCP = ". That peer's process ended without exiting or closing its process group"
            + " (no exit mark in the store): killed, e.g. by kill -9 or the out-of-memory killer, or crashed, not a rank"
            + " that ran out of data; look at that rank's log and the machine's (dmesg for the out-of-memory killer)";

    /** The store note under which each rank publishes its communication hook ({@link ExitMarks#publishNote}). */
    static final String HOOK_NOTE = "ddp-comm-hook";

    /**
     * A failed bucket all-reduce or buffer broadcast, explained from its facts: a peer that was
     * killed or crashed as such; ranks whose communication hooks differ by naming both hooks;
     * else with {@link #JOIN_HINT}, as uneven inputs are the usual reason a peer is elsewhere.
     * Inside join() only a mismatch is explained ({@link #insideJoinHint}). Anything that is not a
     * {@link DistributedException}, or was explained already, is returned unchanged.
     */
    RuntimeException withJoinHint(RuntimeException e) {
        if (insideJoin) {
            return insideJoinHint(e);
        }
        if (!(e instanceof DistributedException d) || (d.hint() != null && !JOIN_HINT.equals(d.hint()))) {
            return e;
        }
        if (d instanceof PeerLostException lost) {
            if (lost.reason() == PeerLostException.Reason.KILLED) {
                return e;
            }
            // Over TCP a peer that exited and one that was killed both just close the connection: ask
            // whether it left its exit mark (ExitMarks) before blaming uneven inputs.
            if (lost.reason() == PeerLostException.Reason.CLOSED
                    && Boolean.FALSE.equals(ExitMarks.peerExited(group, lost.peerRank(), EXIT_MARK_WAIT))) {
                return lost.explainedAs(PeerLostException.Reason.KILLED, KILLED_OVER_TCP);
            }
        }
        if (d instanceof CollectiveMismatchException m) {
            String theirs = ExitMarks.note(group, HOOK_NOTE, m.peerRank(), EXIT_MARK_WAIT);
            String mine = hookName();
            if (theirs != null && !theirs.equals(mine) && !CUSTOM_HOOK.equals(mine) && !CUSTOM_HOOK.equals(theirs)) {
                return m.explained(null, ". The ranks registered different communication hooks: rank " + group.rank()
                        + " uses " + mine + ", rank " + m.peerRank() + " uses " + theirs + "; every rank must register"
                        + " the same hook with the same settings (registerCommHook)");
            }
        }
        return d.hint() != null ? d : d.explained(null, JOIN_HINT);
    }

    /** A hook of the user's own: ranks cannot tell two of them apart by name, so they are not compared. */
    static final String CUSTOM_HOOK = "a hook of its own";

    /**
     * The registered communication hook in words, as the peers compare it: the built-in ones and
     * PowerSGD with its settings; DDP's own all-reduce for none (or allreduce_hook on DDP's group,
     * the same collectives).
     */
    String hookName() {
        if (hook == null) {
            return "no communication hook (DDP's own all-reduce)";
        }
        if (hook == (Object) DefaultHooks.FP16_COMPRESS) {
            return "fp16_compress_hook";
        }
        if (hook == (Object) DefaultHooks.BF16_COMPRESS) {
            return "bf16_compress_hook";
        }
        if (hook == (Object) DefaultHooks.ALLREDUCE) {
            return "allreduce_hook (on a group of its own)";
        }
        if (hookState instanceof PowerSGDState) {
            return hookState.toString();
        }
        return CUSTOM_HOOK;
    }

    /**
     * After a bucket's all-reduce on a rank that left some of its parameters unused: a parameter
     * whose averaged used flag is zero was used by no rank and loses its gradient (the slice is
     * zeroed for when it comes back); the others keep the average as their gradient.
     *
     * @param flags the averaged flags, or null at world size one (then this rank's own use decides)
     */
    private static void applyUsage(ReducerBucket b, float[] flags) {
        for (int slot = 0; slot < b.parameters.size(); slot++) {
            Tensor p = b.parameters.get(slot);
            Tensor view = b.views.get(slot);
            boolean usedAnywhere = flags == null ? b.usedLocally(slot) : flags[slot] != 0f;
            if (usedAnywhere) {
                p.setGrad(view);
            } else {
                view.fill(0);
                p.setGrad(null);
            }
        }
    }

    /**
     * One backward of a rank that has joined ({@link Join}): every bucket all-reduced in launch
     * order with zeros (gradients, used flags and the training flag), matching the collectives and
     * fingerprints of the ranks still training. Bucket 0 is awaited first: when its training flag
     * averages to zero no rank trains any more, every rank is in here, and none launches the rest.
     * The buckets (this rank's gradients) end up holding the others' averaged gradients.
     *
     * @return whether some rank still trained, so this iteration was shadowed
     */
    boolean shadowBackward() {
        try {
            rebuildBeforeFirstHook();
            for (int i = 0; i < buckets.size(); i++) {
                ReducerBucket b = buckets.get(i);
                b.flat.fill(0);
                launch(b, i == buckets.size() - 1);
                if (i == 0) {
                    b.work.await();
                    float[] flags = b.flags.toFloatArray();
                    if (flags[flags.length - 1] == 0f) {
                        if (b.future != null) {
                            b.future.value(); // every rank is here: its callbacks' collectives match
                        }
                        return false;
                    }
                }
            }
            for (ReducerBucket b : buckets) {
                await(b);
            }
            readyOrderComplete = readyOrder != null;
            return true;
        } finally {
            resetForNextBackward();
            zeroSlicesWithoutGradient(); // a parameter without a gradient must contribute zeros later
        }
    }

    private void zeroSlicesWithoutGradient() {
        for (ReducerBucket b : buckets) {
            for (int slot = 0; slot < b.parameters.size(); slot++) {
                if (b.parameters.get(slot).grad() == null) {
                    b.views.get(slot).fill(0);
                }
            }
        }
    }

    /** Every bucket's gradients outstanding again, nothing launched, no end-of-backward queued. */
    private void resetForNextBackward() {
        for (ReducerBucket b : buckets) {
            b.reset();
            b.clearUsed();
        }
        nextToLaunch = 0;
        finishQueued = false;
    }

    /** Frees the buckets, which are the parameters' gradients. */
    @Override
    public void close() {
        for (ReducerBucket b : buckets) {
            b.close();
        }
    }
}
