package org.ddp4j.nn.parallel;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.Work;
import org.ddp4j.distributed.algorithms.ddpcommhooks.CommHook;
import org.ddp4j.distributed.algorithms.ddpcommhooks.CommHookState;
import org.ddp4j.distributed.algorithms.ddpcommhooks.DefaultHooks;
import org.ddp4j.distributed.algorithms.ddpcommhooks.GradBucket;
import org.ddp4j.distributed.algorithms.ddpcommhooks.PowerSGD;
import org.ddp4j.distributed.algorithms.ddpcommhooks.PowerSGDState;
import org.ddp4j.internal.MemoryPlan;

/**
 * Data-parallel training of a module: PyTorch's {@code torch.nn.parallel.DistributedDataParallel}.
 *
 * <p>At construction it broadcasts the module's parameters and buffers from rank 0, so every rank
 * starts from the same state, and lays out each parameter's gradient as a slice of a flat
 * bucket (reverse parameter order; the first bucket closed once it reaches 1 MB, the rest 25 MB,
 * as PyTorch). During backward, as soon as every gradient of a bucket has been accumulated, the
 * bucket's all-reduce is launched asynchronously while backward continues; buckets launch in
 * index order on every rank so the collectives match, and average on the backend. Before backward
 * returns, all buckets are awaited, so each rank holds the average gradient (the buckets, hooks
 * and waits are the {@link Reducer}'s). A forward that follows one run with gradients enabled and
 * synchronisation on (and the first forward) first broadcasts the buffers (e.g. BatchNorm running
 * statistics) from rank 0, in training and in eval mode alike, as PyTorch's
 * {@code broadcast_buffers=True}: so after training every rank evaluates with rank 0's statistics.
 * Parameter names carry the {@code module.} prefix.
 *
 * <p>As PyTorch, the construction verifies that every rank wraps parameters of the same shapes
 * with the same bucket cap (a {@link org.ddp4j.distributed.DistributedException} names each rank's shapes otherwise).
 * Each bucket all-reduce carries a fingerprint (the group's collective number, op, dtype, size,
 * bucket index): when another rank called something else at that point (a metric all-reduce, a
 * different bucket or model), every rank's {@code backward()} fails with a
 * {@link org.ddp4j.distributed.CollectiveMismatchException} naming its own call and the peer's, e.g. "allReduce(AVG) of 1,234
 * float32 elements (#57, DDP bucket 2 of 3) on rank 0: a peer called a different collective: rank
 * 1 called allReduce(SUM) of 1 float32 element (#57)", and no rank keeps a wrong gradient. After the first
 * synchronised backward, the buckets are rebuilt once, at the next training forward, in the order
 * in which rank 0 saw the gradients become ready (PyTorch's {@code _rebuild_buckets}), so that the
 * first buckets fill as early as possible. Results do not depend on the bucket layout.
 *
 * <p><b>Unused parameters</b> are always handled as PyTorch's {@code find_unused_parameters=True},
 * at no extra cost: a parameter no rank used in the forward since the last synchronisation gets
 * no gradient ({@code grad()} is null after backward, so optimizers skip it: SGD's momentum and
 * weight decay do not move it); one used by some ranks only gets the sum of the using ranks'
 * gradients divided by the world size (the others count as zeros). The hooks that did not fire by
 * the end of backward tell each rank what it left unused; the ranks agree through flags carried
 * in the bucket all-reduces themselves (no extra collective, no graph walk). A parameter whose
 * gradient is null gets a fresh one from its next use. {@code findUnusedParameters} is accepted
 * for PyTorch compatibility and changes nothing.
 *
 * <p><b>Uneven inputs:</b> when ranks have different numbers of batches, wrap the training loop in
 * {@link #join()} (PyTorch's {@code with model.join():}); without it the rank with more batches
 * fails in its next backward (a peer is in another collective, has exited, or the group's timeout
 * passes) with a message that suggests {@code ddp.join()}.
 *
 * <p><b>Communication hooks</b> ({@link #registerCommHook}, PyTorch's {@code register_comm_hook})
 * replace the bucket all-reduce: bf16/fp16 compression and PowerSGD are built in
 * ({@link DefaultHooks}, {@link PowerSGD}); the hook's state (PowerSGD's) goes into checkpoints
 * through {@link #commHookState()}.
 *
 * <p>Overlap of communication with backward can be turned off with the environment variable
 * {@code DDP4J_DDP_OVERLAP=0}: every bucket is then all-reduced after backward has finished (for
 * measuring what the overlap saves; the results are the same). In a group of one rank there is
 * nothing to average: forward and backward then issue no collectives at all.
 */
public class DistributedDataParallel extends Module {
    /** PyTorch's defaults: bucket_cap_mb=25 and a 1 MB first bucket. */
    public static final long DEFAULT_BUCKET_CAP_BYTES = 25L << 20;
    public static final long FIRST_BUCKET_CAP_BYTES = Reducer.FIRST_BUCKET_CAP_BYTES;

    private final Module module;
    private final ProcessGroup group;
    private final Reducer reducer;
    /** The open {@link Join}, or null. */
    private Join join;
    /** PyTorch's require_forward_param_sync: the last forward ran with gradients and synchronisation on. */
    private boolean buffersNeedSync = true;

    /**
     * Wraps {@code module} for training on the default process group.
     *
     * @throws IllegalStateException if {@link Distributed#initProcessGroup} was not called
     */
    public DistributedDataParallel(Module module) {
        this(module, Distributed.defaultGroup(), DEFAULT_BUCKET_CAP_BYTES);
    }

    /**
     * Wraps {@code module} with {@code options} (group, bucket cap). Mirrors
     * {@code DistributedDataParallel(module, **options)}.
     *
     * @throws IllegalStateException if no group is given and {@link Distributed#initProcessGroup} was not called
     * @throws IllegalArgumentException if the bucket cap is not positive; else as
     *     {@link #DistributedDataParallel(Module, ProcessGroup, long)}
     */
    public DistributedDataParallel(Module module, DistributedDataParallelOptions options) {
        this(module, options.resolvedProcessGroup(), options.bucketCapBytes(), options.findUnusedParameters());
    }

    /**
     * Wraps {@code module} for training on {@code group}.
     *
     * @param bucketCapBytes the most gradient bytes in one bucket (the first bucket holds at most 1 MB)
     * @throws IllegalArgumentException if a parameter is not float32, or a parameter or buffer is
     *     not on the group's device
     * @throws DistributedException if the ranks' parameters differ in shape or bucket cap, or the
     *     broadcast of the initial state fails
     * @throws IllegalStateException when the parameters and their gradients alone exceed what a rank
     *     may use (see {@code DDP4J_MEMORY_PER_RANK}), naming the numbers
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
                throw new IllegalArgumentException("DistributedDataParallel supports float32 parameters, got " + p.describe()
                        + (p.dtype() == DType.INT64 ? "" : "; bfloat16 and float16 parameters are not supported yet: keep"
                        + " parameters in float32 (master weights, as PyTorch's autocast does)"));
            }
            checkDevice("parameter", p, group);
            params.add(p);
        }
        for (Tensor b : module.namedBuffers().values()) {
            checkDevice("buffer", b, group);
        }
        long hostBytes = Tensors.hostBytes(params);
        MemoryPlan.check("DistributedDataParallel", parts("parameters", hostBytes, "gradients (the buckets)", hostBytes),
                () -> "every rank keeps the whole model and its gradients: use fewer ranks on each host, or a smaller model");
        ParameterLayout.verifyAcrossRanks(group, module, params, bucketCapBytes);
        broadcastState(module.stateDict().values(), 0);
        reducer = new Reducer(params, group, bucketCapBytes);
    }

    /** Names and byte counts in order, for {@link MemoryPlan#check}. */
    private static Map<String, Long> parts(String first, long firstBytes, String second, long secondBytes) {
        Map<String, Long> out = new LinkedHashMap<>();
        out.put(first, firstBytes);
        out.put(second, secondBytes);
        return out;
    }

    /**
     * As {@link #DistributedDataParallel(Module, ProcessGroup, long)}; {@code findUnusedParameters}
     * is accepted for PyTorch's name and changes nothing: unused parameters are always found, at
     * no cost (see the class documentation). Mirrors {@code DistributedDataParallel(module,
     * process_group=group, bucket_cap_mb=..., find_unused_parameters=...)}.
     */
    public DistributedDataParallel(Module module, ProcessGroup group, long bucketCapBytes,
            boolean findUnusedParameters) {
        this(module, group, bucketCapBytes);
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

    /**
     * The number of elements each bucket all-reduces (its gradients, then DDP's flags), in the
     * order the buckets are launched; a diagnostic, as PyTorch's bucket logging.
     */
    public List<Long> bucketNumel() {
        return reducer.bucketNumel();
    }

    /** The parameters of each bucket, in launch order (for tests). */
    List<List<Tensor>> bucketParameters() {
        return reducer.bucketParameters();
    }

    /**
     * Broadcasts tensors from {@code root}, coalesced into one flat tensor per dtype so that a model's
     * many small buffers cost one collective, not one each (as PyTorch's _broadcast_coalesced).
     */
    void broadcastState(Collection<Tensor> tensors, int root) {
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
                works.add(this.group.broadcast(flat, root));
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
     * Runs the wrapped module. First, as PyTorch's {@code broadcast_buffers=True}, it broadcasts
     * the module's buffers from rank 0 when the previous forward ran with gradients enabled and
     * synchronisation on (outside {@link #noSync()}), or when this is the first forward, whatever
     * the mode: the first eval forward after training (e.g. under {@code noGrad}) gives every rank
     * rank 0's BatchNorm running statistics, and later eval forwards under {@code noGrad} make no
     * collective, so ranks may evaluate different numbers of batches after that first one. Inside
     * {@link #join()} the buffers are broadcast at every training forward, from the highest rank
     * still training, found by one small all-reduce (as PyTorch), only for a module that has
     * buffers. The first training forward after the first synchronised backward also rebuilds the
     * gradient buckets in the order gradients became ready.
     */
    @Override
    public Tensor forward(Tensor input) {
        return call(() -> module.forward(input));
    }

    /**
     * Runs {@code forward}, a call into the wrapped module other than {@code forward(Tensor)} (one
     * that takes several inputs or returns the loss: {@code ddp.call(() -> model.loss(x, y))}),
     * with everything {@link #forward(Tensor)} does around it: what PyTorch's DDP does for
     * {@code model(x, labels=y)}, whose forward takes any arguments. The call must run the module's
     * forward pass once (the parameters it uses get gradients from the backward as usual).
     *
     * @param forward the call; its result is returned
     * @return what forward returned
     */
    public Tensor call(java.util.function.Supplier<Tensor> forward) {
        if (isTraining() && Tensors.isGradEnabled()) {
            reducer.rebuildBucketsIfReady(join == null);
        }
        if (Tensors.isGradEnabled()) {
            reducer.markForward();
        }
        // Inside join() every forward is a training one, and the joined ranks shadow exactly that.
        boolean syncBuffers = join != null ? isTraining() : buffersNeedSync;
        // With one rank there is nothing to broadcast or average: skip the collectives.
        if (syncBuffers && reducer.communicates()) {
            Collection<Tensor> buffers = module.namedBuffers().values();
            int root = join != null && !buffers.isEmpty() ? Join.highestRankWhere(group, true) : 0;
            try {
                broadcastState(buffers, root);
            } catch (RuntimeException e) {
                // Where a rank with fewer batches is missed first when the model has buffers (BatchNorm).
                throw join != null ? e : reducer.withJoinHint(e);
            }
        }
        Tensor output;
        try {
            output = forward.get();
        } catch (RuntimeException e) {
            // A collective of the model's own (SyncBatchNorm's) met the joined ranks' shadowing.
            throw join != null ? Reducer.insideJoinHint(e) : e;
        }
        buffersNeedSync = Tensors.isGradEnabled() && reducer.isSyncEnabled();
        return output;
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
        if (join != null) {
            throw new IllegalStateException("DistributedDataParallel.noSync() inside join() is not supported: the ranks"
                    + " that have joined could not tell a skipped synchronisation from a finished rank; close the"
                    + " join first, or synchronise every step inside it");
        }
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

    /**
     * Lets ranks with different numbers of batches train together. Mirrors PyTorch's
     * {@code with model.join():} (torch.distributed.algorithms.Join with DDP's join hook):
     * <pre>{@code
     * try (var join = ddp.join()) {
     *     for (Batch b : loader) { ... forward, backward, step ... }
     * }
     * }</pre>
     * Every rank must open it (around the same loop). A rank whose loop ends early waits in
     * {@link Join#close()}, taking part in the others' gradient all-reduces with zeros, so each
     * step's gradient is the sum over the ranks still training divided by the world size
     * (PyTorch's default {@code divide_by_initial_world_size=True}); buffers are broadcast from the
     * highest rank still training. When every rank has reached close(), the highest of the ranks
     * that joined last broadcasts its parameters and buffers, so every rank ends with the trained
     * model (as PyTorch's join hook). Inside the join, each step's bucket all-reduces carry whether
     * their rank still trains, so a step costs no extra collective (one small all-reduce per
     * forward for a module with buffers, to pick the broadcasting rank, as PyTorch).
     *
     * @throws IllegalStateException if a join is already open on this model, or inside {@link #noSync()}
     */
    public Join join() {
        if (join != null) {
            throw new IllegalStateException("DistributedDataParallel.join(): a join is already open on this model; close"
                    + " it first (use one try (var join = ddp.join()) { ... } around the training loop)");
        }
        if (!reducer.isSyncEnabled()) {
            throw new IllegalStateException("DistributedDataParallel.join() inside noSync() is not supported; close the"
                    + " noSync scope first");
        }
        join = new Join(this);
        reducer.setInsideJoin(true);
        return join;
    }

    /**
     * Replaces how each gradient bucket is reduced over the ranks: {@code hook} gets every bucket
     * ({@link GradBucket}: its flat float32 gradient, index, parameters) and returns the future of
     * the reduced gradient, which becomes the parameters' {@code grad()}. Mirrors
     * {@code DistributedDataParallel.register_comm_hook(state, hook)}; the built-ins are in
     * {@link DefaultHooks} (allreduce, fp16 and bf16 compression) and {@link PowerSGD}:
     * <pre>{@code
     * ddp.registerCommHook(group, DefaultHooks.BF16_COMPRESS);
     * ddp.registerCommHook(new PowerSGDState(group, 4, 10, 2, true, true, 0f, 0), PowerSGD.POWER_SGD);
     * }</pre>
     * Hooks are called on the training thread in bucket order; DDP waits for their futures at the
     * end of backward, in bucket order (each wait bounded by the group's timeout, as the
     * collectives inside). Unused parameters and {@link #join()} keep working: under a hook, each
     * bucket's flags (see the class comment) travel in one small all-reduce of their own after the
     * hook's. {@code DefaultHooks.ALLREDUCE} with this model's group is the built-in path itself
     * (no extra message). At world size 1 no hook is called (nothing to reduce). Every rank must
     * register the same hook.
     *
     * @param state the hook's state (the process group for {@link DefaultHooks}; null there means
     *     the default group), kept and returned by {@link #commHookState()}
     * @throws IllegalStateException if a hook was registered already, or a backward has run
     * @throws IllegalArgumentException if {@code hook} is null
     */
    public <S> void registerCommHook(S state, CommHook<S> hook) {
        reducer.registerCommHook(state, hook);
    }

    /**
     * The state passed to {@link #registerCommHook} (null when no hook was registered): for a
     * {@link CommHookState} such as {@link PowerSGDState}, what a checkpoint saves.
     */
    public Object commHookState() {
        return reducer.commHookState();
    }

    /** Called by {@link Join#close()}. */
    void joinClosed() {
        join = null;
        reducer.setInsideJoin(false);
    }

    Reducer reducer() {
        return reducer;
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
