package org.ddp4j.distributed.fsdp;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.nn.IncompatibleKeys;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.utils.ClipGradNorm;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * A module {@link FullyShard#fullyShard fully_shard} has sharded: PyTorch's {@code FSDPModule}.
 * Its {@link #parameters()} are this rank's float32 shards (the optimizer steps them), under the
 * module's own parameter names; the module's parameter tensors hold values only while a forward or
 * backward needs them. Train through the outermost one (the root) exactly as through
 * DistributedDataParallel: {@code root.forward(x)} (or {@link #call}), {@code loss.backward()},
 * {@code ClipGradNorm.clipGradNorm(root.parameters(), 1.0)}, {@code optimizer.step()}.
 *
 * <p>During the root's forward, the first read of a unit's parameter all-gathers the whole unit
 * (one collective), and the unit gathered before it is freed when it was made with
 * {@code reshardAfterForward} (the root's own parameters stay until its backward). In the backward
 * a freed unit is gathered again at its first use; once every gradient of a unit has arrived they
 * are reduce-scattered (averaged over the ranks) into the shards' {@code grad()} and the unit is
 * freed. At the end of the backward every unit is freed. Gathers happen in the order the program
 * reads the parameters, the same on every rank.
 *
 * <p>Read the wrapped module's own parameters only inside a forward or backward, or after
 * {@link #unshard()} on every rank: a read on one rank alone (a print on rank 0) all-gathers there
 * alone and fails when the group's timeout ends. The shards ({@link #parameters()}) read freely.
 *
 * <p>Not thread-safe; one training thread per rank, as everything in ddp4j.
 */
public final class FSDPModule extends Module {
    private final Module module;
    private final ProcessGroup group;
    private final FSDPParamGroup own;
    /** Every unit this module covers: those of nested fully_shard calls in tree order, then its own. */
    private final List<FSDPParamGroup> units = new ArrayList<>();
    private FSDPModule parent;

    // The root's per-step state.
    private boolean inForward;
    private boolean backwardCallbackQueued;
    private boolean requiresGradientSync = true;
    /** Whether the last backward kept its gradients unreduced for the next one (sync off). */
    private boolean accumulating;

    FSDPModule(Module module, List<FSDPModule> nested, List<Tensor> ownParameters, FullyShardOptions options) {
        this.module = module;
        this.group = options.resolvedProcessGroup();
        for (FSDPModule n : nested) {
            if (n.group.size() != group.size() || n.group.rank() != group.rank()) {
                throw new IllegalArgumentException("fullyShard: a nested unit was sharded over another group ("
                        + n.group.size() + " ranks) than this one (" + group.size() + "); shard every unit over the same group");
            }
            n.parent = this;
            units.addAll(n.units);
        }
        this.own = new FSDPParamGroup(this, ownParameters, group, options);
        units.add(own);
        train(module.isTraining());
    }

    /** The module that was sharded (its own parameters are the gathered ones; read them inside forward only). */
    public Module module() {
        return module;
    }

    public ProcessGroup processGroup() {
        return group;
    }

    /** The outermost FSDPModule that covers this one (this one when none does). */
    FSDPModule root() {
        return parent == null ? this : parent.root();
    }

    /** Whether this is the outermost FSDPModule, the one to train through. */
    public boolean isRoot() {
        return parent == null;
    }

    /** The module's forward with fully_shard's work around it. See the class comment. */
    @Override
    public Tensor forward(Tensor input) {
        return call(() -> module.forward(input));
    }

    /**
     * Runs {@code forward}, a call into the wrapped module other than {@code forward(Tensor)}
     * ({@code fsdp.call(() -> model.loss(x, y))}), with what {@link #forward(Tensor)} does around it.
     *
     * @return what forward returned
     */
    public Tensor call(Supplier<Tensor> forward) {
        FSDPModule root = root();
        if (root != this) {
            return forward.get();
        }
        // Values gathered before (a read between backward and step, an earlier forward without a
        // backward) may predate the optimizer's step, and a backward that threw left its state: start clean.
        backwardCallbackQueued = false;
        for (FSDPParamGroup unit : units) {
            unit.reshard();
            unit.resetBackward(accumulating);
        }
        inForward = true;
        Tensor out;
        try {
            out = forward.get();
        } finally {
            inForward = false;
        }
        for (FSDPParamGroup unit : units) {
            // Without a backward to come, no unit's parameters are needed again.
            if (!Tensors.isGradEnabled() || (unit != own && unit.reshardAfterForward)) {
                unit.reshard();
            }
        }
        return out;
    }

    /** Called by a unit about to gather: in the root's forward, the units before it are done with. */
    void beforeUnshard(FSDPParamGroup unit) {
        if (!inForward) {
            return;
        }
        for (FSDPParamGroup other : units) {
            if (other != unit && other != own && other.reshardAfterForward) {
                other.reshard();
            }
        }
    }

    /** Called by the first gradient of a backward: queues the end-of-backward work once. */
    void backwardStarted() {
        if (!backwardCallbackQueued) {
            backwardCallbackQueued = true;
            Tensors.queueBackwardCallback(this::finishBackward);
        }
    }

    /** Reduces the units some of whose parameters got no gradient, then frees every unit. */
    private void finishBackward() {
        backwardCallbackQueued = false;
        accumulating = !requiresGradientSync;
        for (int i = units.size() - 1; i >= 0; i--) {
            if (units.get(i).hasPendingGradients()) {
                units.get(i).postBackward();
            }
        }
        units.forEach(FSDPParamGroup::reshard);
    }

    boolean requiresGradientSync() {
        return requiresGradientSync;
    }

    /**
     * Whether the backward reduce-scatters gradients (default true). Off, each unit keeps its
     * full gradients and the next backward adds to them, so k micro-batches cost one reduction:
     * DDP's {@code no_sync()}. The backward with sync on again reduces the sum. Applies to every
     * unit under this root. Mirrors {@code FSDPModule.set_requires_gradient_sync}.
     */
    public void setRequiresGradientSync(boolean value) {
        root().requiresGradientSync = value;
    }

    /** All-gathers every unit now (e.g. to read the full parameters). Mirrors {@code FSDPModule.unshard()}. */
    public void unshard() {
        units.forEach(FSDPParamGroup::unshard);
    }

    /** Frees every unit's gathered parameters. Mirrors {@code FSDPModule.reshard()}. */
    public void reshard() {
        units.forEach(FSDPParamGroup::reshard);
    }

    /** The unit's record of a module parameter, or null when it is none (a buffer). */
    private FSDPParamGroup.ShardedParam find(Tensor moduleTensor) {
        for (FSDPParamGroup unit : units) {
            FSDPParamGroup.ShardedParam p = unit.paramOf(moduleTensor);
            if (p != null) {
                return p;
            }
        }
        return null;
    }

    private FSDPParamGroup.ShardedParam sharded(Tensor moduleParameter) {
        FSDPParamGroup.ShardedParam p = find(moduleParameter);
        if (p == null) {
            throw new IllegalStateException("fullyShard: parameter " + moduleParameter.describe() + " of "
                    + module.getClass().getSimpleName() + " is in no unit (was it added after fullyShard?)");
        }
        return p;
    }

    /**
     * Where this rank's shard of a parameter sits in the whole parameter (PyTorch's DTensor
     * placement {@code Shard(0)}): rows {@code [rowOffset, rowOffset + realRows)} of a tensor of
     * {@code fullShape}; the shard's rows past realRows (up to rowsPerShard) are zero padding.
     */
    public record ShardPlacement(long[] fullShape, long rowsPerShard, long rowOffset, long realRows) {}

    /**
     * The placement of {@code shard}, one of {@link #parameters()}.
     *
     * @throws IllegalArgumentException if it is not a shard of this module
     */
    public ShardPlacement placement(Tensor shard) {
        for (FSDPParamGroup unit : units) {
            for (FSDPParamGroup.ShardedParam p : unit.params()) {
                if (p.shard() == shard) {
                    int rank = group.rank();
                    return new ShardPlacement(p.unsharded().shape(), p.rowsPerShard(), rank * p.rowsPerShard(),
                            p.realRows(rank));
                }
            }
        }
        throw new IllegalArgumentException("placement: " + shard.describe() + " is not a shard of this FSDPModule");
    }

    /**
     * This rank's shards by the module's parameter names: {@code [ceil(dim0 / worldSize), ...]}
     * float32 leaves, the rows past the parameter's end zero (PyTorch's local tensor leaves out
     * that padding). Mirrors {@code named_parameters()} of an FSDP module (DTensors there).
     */
    @Override
    public Map<String, Tensor> namedParameters() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        module.namedParameters().forEach((name, t) -> out.put(name, sharded(t).shard()));
        return out;
    }

    @Override
    public Map<String, Tensor> namedBuffers() {
        return module.namedBuffers();
    }

    @Override
    public Map<String, Module> namedChildren() {
        return module.namedChildren();
    }

    /**
     * The sharded state: this rank's shards (live) under the parameter names and the buffers.
     * Mirrors FSDP2's {@code state_dict()} (DTensors); {@link #fullStateDict()} gathers the whole one.
     */
    @Override
    public Map<String, Tensor> stateDict() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        module.stateDict().forEach((name, t) -> {
            FSDPParamGroup.ShardedParam p = find(t);
            out.put(name, p != null ? p.shard() : t);
        });
        return out;
    }

    /** Every unit gathered in float32: the master values, not the compute dtype's rounding of them. */
    private void gatherMasters() {
        reshard();
        units.forEach(unit -> unit.unshard(DType.FLOAT32));
    }

    /**
     * The whole model's state, gathered: new tensors of the parameters' full shapes (copies the
     * caller closes) and copies of the buffers, on every rank, under the module's names. A
     * collective: every rank calls it. Mirrors {@code get_model_state_dict(model,
     * options=StateDictOptions(full_state_dict=True))}.
     */
    public Map<String, Tensor> fullStateDict() {
        gatherMasters();
        try {
            Map<String, Tensor> out = new LinkedHashMap<>();
            module.stateDict().forEach((name, t) -> out.put(name, Tensor.zeros(t.dtype(), t.shape()).keep().copyFrom(t)));
            return out;
        } finally {
            reshard();
        }
    }

    /**
     * Loads a full state dict (tensors of the parameters' full shapes, e.g. from
     * {@link #fullStateDict()} or a DDP checkpoint) into the shards and buffers, with every check
     * of {@link Module#loadStateDict(Map, boolean)}. A collective: every rank calls it with the
     * same values. Mirrors {@code set_model_state_dict(model, full_state_dict)}.
     *
     * @throws IllegalArgumentException as {@link Module#loadStateDict(Map, boolean)}; nothing is loaded then
     */
    @Override
    public IncompatibleKeys loadStateDict(Map<String, Tensor> state, boolean strict) {
        gatherMasters(); // so that what a non-strict load leaves alone is written back unrounded
        try {
            IncompatibleKeys keys = module.loadStateDict(state, strict);
            units.forEach(FSDPParamGroup::writeBackShards);
            return keys;
        } finally {
            reshard();
        }
    }

    /**
     * Scales the shards' gradients so that the norm over all ranks' gradients is at most maxNorm
     * (one all-reduce of a scalar), and returns that norm: what
     * {@code ClipGradNorm.clipGradNorm(root.parameters(), maxNorm)} does for these shards too.
     * Mirrors {@code clip_grad_norm_} over an FSDP module's parameters.
     */
    public double clipGradNorm(double maxNorm) {
        return ClipGradNorm.clipGradNorm(parameters(), maxNorm);
    }

    /** The combiner {@link ClipGradNorm} uses for this module's shards. */
    ClipGradNorm.ShardCombiner normCombiner() {
        return new NormOverGroup(group);
    }

    /**
     * One all-reduce of a partial norm over the group; equal for one group, so all the units of
     * a model (sharded over one group) combine in one all-reduce.
     */
    private record NormOverGroup(ProcessGroup group) implements ClipGradNorm.ShardCombiner {
        @Override
        public double combine(double local, boolean max) {
            try (Tensor t = Tensor.of(new float[] {(float) local}, 1).keep()) {
                group.allReduce(t, max ? ReduceOp.MAX : ReduceOp.SUM).await();
                return t.item();
            }
        }
    }

    /**
     * Resets the shards' gradients and drops the gradients accumulated with gradient sync off
     * (which live on the gathered parameters until a synchronised backward reduces them).
     * {@code optimizer.zeroGrad()} resets the shards' only. Mirrors {@code zero_grad(set_to_none)}.
     */
    @Override
    public void zeroGrad(boolean setToNone) {
        super.zeroGrad(setToNone);
        units.forEach(FSDPParamGroup::clearUnshardedGradients);
        root().accumulating = false;
    }

    @Override
    public Module train(boolean mode) {
        super.train(mode);
        module.train(mode);
        return this;
    }

    /**
     * @throws UnsupportedOperationException always: move the module before fullyShard
     */
    @Override
    public Module to(Device device) {
        throw new UnsupportedOperationException("FSDPModule.to(" + device + "): move the module before fullyShard, as in"
                + " PyTorch (fully_shard puts its shards on the module's device)");
    }

    @Override
    public String toString() {
        return "FSDP" + module.toString();
    }

    /** Frees the shards and gradients of every unit under this module and the module itself. */
    @Override
    public void close() {
        List<Tensor> shards = new ArrayList<>(namedParameters().values());
        ClipGradNorm.unregisterShards(shards);
        units.forEach(FSDPParamGroup::close);
        module.close();
        for (FSDPParamGroup unit : units) {
            FullyShard.forget(unit.owner());
        }
    }

    List<FSDPParamGroup> units() {
        return Collections.unmodifiableList(units);
    }
}
