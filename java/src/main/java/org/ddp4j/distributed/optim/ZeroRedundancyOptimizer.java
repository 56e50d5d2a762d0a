package org.ddp4j.distributed.optim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.Work;
import org.ddp4j.internal.MemoryPlan;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.OptimizerStateDict;
import org.ddp4j.optim.ParamGroup;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * ZeRO stage 1: the optimizer state sharded across the ranks of a group. Mirrors
 * {@code torch.distributed.optim.ZeroRedundancyOptimizer(params, optimizer_class, process_group)}.
 *
 * <p>Every parameter is owned by one rank, chosen as PyTorch does: within each parameter group,
 * largest first, each to the rank that owns the fewest elements so far (the lowest such rank on a
 * tie). Each rank wraps its own parameters in a local optimizer of the given class (the same
 * groups and options, each group holding only its owned parameters), so it keeps the state
 * (AdamW's two moments: 8 bytes a parameter) of about 1/world of the model. {@link #step()} steps
 * the local optimizer on the gradients every rank has (under {@code DistributedDataParallel}, the
 * averaged ones), then each owner broadcasts its updated parameters, so every rank ends the step
 * with the same parameters as one optimizer over all of them, bit for bit.
 *
 * <p>As an {@link Optimizer} it holds every parameter in the groups given, so {@link #zeroGrad},
 * learning-rate schedulers, {@code GradScaler} and {@code clipGradNorm} work as on any optimizer;
 * options set on its groups (a scheduler's lr) reach the local optimizer at the next step, which
 * checks them then. State dicts have the wrapped optimizer's layout over all parameters:
 * {@link #consolidateStateDict(int)} on every rank gathers the state on one rank, where
 * {@link #stateDict()} then gives it (loadable into a plain optimizer of the wrapped class, or into
 * a ZeroRedundancyOptimizer at any world size); {@link #loadStateDict} takes such a full state on
 * every rank and keeps each rank's own part. Groups added after construction are not sharded:
 * {@link #step()} refuses them.
 *
 * <p>Example: {@code new ZeroRedundancyOptimizer(model.parameters(), groups -> new AdamW(groups,
 * AdamW.Options.defaults().lr(3e-4)))}.
 */
public final class ZeroRedundancyOptimizer extends Optimizer {
    private final ProcessGroup group;
    private final int rank;
    /** The rank that owns each parameter index (over all groups, in order). */
    private final int[] owners;
    /** Each owned parameter's index here, in the local optimizer's parameter order. */
    private final int[] ownedIndices;
    private final Optimizer local;
    private final List<String> stateNames;
    /** The state gathered by {@link #consolidateStateDict}, on its destination rank; null elsewhere or before. */
    private Map<Integer, Map<String, Tensor>> consolidated;
    /** Owned parameters' state from {@link #loadStateDict}, handed to the local optimizer at the next step. */
    private Map<Integer, Map<String, Tensor>> pendingLoad;

    /**
     * Over the default process group; {@code params} form one group.
     *
     * @param optimizerClass makes the wrapped optimizer from parameter groups (Maps with
     *     {@code params} and options), e.g. {@code groups -> new AdamW(groups, options)}; PyTorch's
     *     {@code optimizer_class} with its keyword arguments
     * @throws IllegalArgumentException as the wrapped optimizer's constructor, or when a rank would
     *     own no parameter (more ranks than parameters)
     */
    public ZeroRedundancyOptimizer(List<Tensor> params,
            Function<List<Map<String, Object>>, ? extends Optimizer> optimizerClass) {
        this(List.of(Map.of("params", params)), optimizerClass, Distributed.defaultGroup());
    }

    /**
     * Over {@code group}, with parameter groups as {@link Optimizer} takes them (see
     * {@link #ZeroRedundancyOptimizer(List, Function)}).
     */
    public ZeroRedundancyOptimizer(Collection<? extends Map<String, ?>> paramGroups,
            Function<List<Map<String, Object>>, ? extends Optimizer> optimizerClass, ProcessGroup group) {
        this(Wrapped.of(paramGroups, optimizerClass), optimizerClass, group);
    }

    private ZeroRedundancyOptimizer(Wrapped wrapped, Function<List<Map<String, Object>>, ? extends Optimizer> optimizerClass,
            ProcessGroup group) {
        super(wrapped.name, wrapped.defaults, wrapped.groups);
        this.group = Objects.requireNonNull(group, "group");
        this.rank = group.rank();
        this.stateNames = wrapped.stateNames;
        this.owners = partition(paramGroups(), group.size());
        List<Map<String, Object>> localGroups = new ArrayList<>();
        List<Integer> owned = new ArrayList<>();
        int index = 0;
        for (ParamGroup g : paramGroups()) {
            List<Tensor> mine = new ArrayList<>();
            for (Tensor p : g.params()) {
                if (owners[index] == rank) {
                    mine.add(p);
                    owned.add(index);
                }
                index++;
            }
            Map<String, Object> spec = new LinkedHashMap<>(g.options());
            spec.put("params", mine);
            localGroups.add(spec);
        }
        if (owned.isEmpty()) {
            throw new IllegalArgumentException("ZeroRedundancyOptimizer: rank " + rank + " of " + group.size()
                    + " owns no parameter (" + params().size() + " parameters for " + group.size()
                    + " ranks): use at most " + params().size() + " ranks, or a plain optimizer");
        }
        this.ownedIndices = owned.stream().mapToInt(Integer::intValue).toArray();
        this.local = MemoryPlan.unchecked(() -> optimizerClass.apply(localGroups));
        long hostBytes = Tensors.hostBytes(params());
        Map<String, Long> parts = new LinkedHashMap<>();
        parts.put("parameters", hostBytes);
        parts.put("gradients", hostBytes);
        parts.put("this rank's share of " + wrapped.name + "'s state", local.plannedStateBytes());
        MemoryPlan.check("ZeroRedundancyOptimizer", parts, () -> "the parameters and gradients stay whole on every"
                + " rank: shard them too with fully_shard (org.ddp4j.distributed.fsdp), use more ranks (over more hosts)"
                + " or a smaller model");
    }

    /** The wrapped class's name, defaults, state names and fully resolved groups, from an instance over all parameters. */
    private record Wrapped(String name, Map<String, Object> defaults, List<Map<String, Object>> groups,
            List<String> stateNames) {
        static Wrapped of(Collection<? extends Map<String, ?>> paramGroups,
                Function<List<Map<String, Object>>, ? extends Optimizer> optimizerClass) {
            List<Map<String, Object>> given = new ArrayList<>();
            paramGroups.forEach(g -> given.add(new LinkedHashMap<>(g)));
            // State is made at a parameter's first step, so this instance holds none (and plans none).
            try (Optimizer all = MemoryPlan.unchecked(() -> optimizerClass.apply(given))) {
                List<Map<String, Object>> groups = new ArrayList<>();
                for (ParamGroup g : all.paramGroups()) {
                    Map<String, Object> spec = new LinkedHashMap<>(g.options());
                    spec.put("params", g.params());
                    groups.add(spec);
                }
                return new Wrapped(all.name(), all.paramGroups().get(0).options(), groups, all.stateNames());
            }
        }
    }

    /**
     * PyTorch's partition: within each group, parameters largest first (by element count, stable),
     * each to the rank with the fewest elements so far (the lowest on a tie). Returns the owner of
     * each parameter index.
     */
    static int[] partition(List<ParamGroup> groups, int world) {
        long[] sizes = new long[world];
        int total = groups.stream().mapToInt(g -> g.params().size()).sum();
        int[] owners = new int[total];
        int first = 0;
        for (ParamGroup g : groups) {
            List<Tensor> params = g.params();
            Integer[] order = new Integer[params.size()];
            for (int j = 0; j < order.length; j++) {
                order[j] = j;
            }
            Arrays.sort(order, (a, b) -> Long.compare(params.get(b).numel(), params.get(a).numel()));
            for (int j : order) {
                int smallest = 0;
                for (int r = 1; r < world; r++) {
                    if (sizes[r] < sizes[smallest]) {
                        smallest = r;
                    }
                }
                owners[first + j] = smallest;
                sizes[smallest] += params.get(j).numel();
            }
            first += params.size();
        }
        return owners;
    }

    /**
     * The rank that owns {@code param} and keeps its optimizer state.
     *
     * @throws IllegalArgumentException when {@code param} is not one of this optimizer's parameters
     */
    public int ownerOf(Tensor param) {
        int i = indexOf(param);
        if (i < 0) {
            throw new IllegalArgumentException("ZeroRedundancyOptimizer: " + param.describe() + " is not one of its parameters");
        }
        return owners[i];
    }

    /** The optimizer over this rank's own parameters. Mirrors {@code ZeroRedundancyOptimizer.optim}. */
    public Optimizer localOptimizer() {
        return local;
    }

    /**
     * Steps this rank's parameters with the local optimizer, then broadcasts every parameter from
     * its owner. A collective: every rank of the group calls it. Mirrors {@code step()}.
     *
     * @throws IllegalStateException when groups were added after construction
     * @throws IllegalArgumentException when an option set since the last step is invalid (the local optimizer's check)
     */
    @Override
    public void step() {
        if (paramGroups().size() != local.paramGroups().size()) {
            throw new IllegalStateException("ZeroRedundancyOptimizer: a parameter group was added after construction;"
                    + " ZeRO shards only the groups it was built with: build a new ZeroRedundancyOptimizer with all groups");
        }
        applyPendingLoad();
        syncOptions();
        dropConsolidated();
        local.step();
        try (var scope = Tensors.scope()) {
            List<Work> works = new ArrayList<>();
            for (int i = 0; i < owners.length; i++) {
                works.add(group.broadcast(params().get(i), owners[i]));
            }
            works.forEach(Work::await);
        }
    }

    /** Copies each group's options (a scheduler's lr, a changed weight decay) to the local optimizer's group. */
    private void syncOptions() {
        for (int gi = 0; gi < paramGroups().size(); gi++) {
            ParamGroup mine = local.paramGroups().get(gi);
            paramGroups().get(gi).options().forEach((key, value) -> {
                if (!value.equals(mine.get(key))) {
                    mine.set(key, value);
                }
            });
        }
    }

    /** This rank's share of the state (the local optimizer's); -1 while constructing (the constructor checks then). */
    @Override
    public long plannedStateBytes() {
        return local == null ? -1 : local.plannedStateBytes();
    }

    /** Never called: {@link #step()} steps the local optimizer. */
    @Override
    protected void stepGroup(ParamGroup group, int firstIndex) {
        throw new UnsupportedOperationException("ZeroRedundancyOptimizer steps its local optimizer");
    }

    /** Options are checked by the local optimizer when they reach it (construction, and the step after a change). */
    @Override
    protected void checkOptions(Map<String, Object> options) {}

    @Override
    public List<String> stateNames() {
        return stateNames;
    }

    @Override
    public List<String> requiredStateNames(Map<String, Object> options) {
        return local.requiredStateNames(options);
    }

    @Override
    public boolean isStepCount(String stateName) {
        return local.isStepCount(stateName);
    }

    /**
     * Gathers every parameter's optimizer state on rank {@code to}, where {@link #stateDict()} then
     * returns it (the others keep only their own). A collective: every rank calls it. The
     * gathered state is a copy, dropped at the next step. Mirrors {@code consolidate_state_dict(to)}.
     *
     * @throws IllegalArgumentException when {@code to} is not a rank of the group
     */
    public void consolidateStateDict(int to) {
        if (to < 0 || to >= group.size()) {
            throw new IllegalArgumentException("ZeroRedundancyOptimizer.consolidateStateDict: rank " + to
                    + " is not in the group (ranks 0.." + (group.size() - 1) + ")");
        }
        applyPendingLoad();
        dropConsolidated();
        Map<Integer, Map<String, Tensor>> gathered = new LinkedHashMap<>();
        try (var scope = Tensors.scope()) {
            Map<Integer, Map<String, Tensor>> mine = ownedState();
            for (int i = 0; i < owners.length; i++) {
                Map<String, Tensor> entries = StateBroadcast.broadcast(group, owners[i],
                        owners[i] == rank ? mine.getOrDefault(i, Map.of()) : null, rank == to);
                if (rank == to && !entries.isEmpty()) {
                    gathered.put(i, entries);
                }
            }
        }
        consolidated = rank == to ? gathered : null;
    }

    /**
     * The state of the parameters this rank owns, keyed by their index here (over all groups, as
     * {@link #stateDict()} keys it): the local optimizer's state dict entries, live tensors (Adam's
     * {@code step} a new scalar in the current scope).
     */
    public Map<Integer, Map<String, Tensor>> ownedState() {
        applyPendingLoad();
        Map<Integer, Map<String, Tensor>> out = new LinkedHashMap<>();
        local.stateDict().state().forEach((localIndex, entries) -> out.put(ownedIndices[localIndex], entries));
        return out;
    }

    /**
     * Every parameter's state, on the rank that last called {@link #consolidateStateDict} as its
     * destination (since the last step).
     *
     * @throws IllegalStateException on any other rank, or before consolidating: the message says
     *     to call consolidateStateDict(to) on every rank first
     */
    @Override
    protected Map<String, Tensor> savedState(int index) {
        if (consolidated == null) {
            throw new IllegalStateException("ZeroRedundancyOptimizer: the optimizer state is not consolidated on rank "
                    + rank + ": call consolidateStateDict(" + rank + ") on every rank first (after the last step),"
                    + " then stateDict() on rank " + rank + " (PyTorch's consolidate_state_dict(to=" + rank + "))");
        }
        return new LinkedHashMap<>(consolidated.getOrDefault(index, Map.of()));
    }

    /** Keeps a loaded state only for the parameters this rank owns; the local optimizer takes it at the next step. */
    @Override
    protected void restoreState(int index, Map<String, Tensor> saved) {
        if (owners[index] != rank) {
            return;
        }
        if (pendingLoad == null) {
            pendingLoad = new LinkedHashMap<>();
        }
        Map<String, Tensor> copies = new LinkedHashMap<>();
        saved.forEach((key, t) -> {
            Tensor moved = t.to(params().get(index).device()); // t itself when already there: copy it
            copies.put(key, (moved == t ? t.copy() : moved).keep());
        });
        pendingLoad.put(index, copies);
    }

    private void applyPendingLoad() {
        if (pendingLoad == null) {
            return;
        }
        Map<Integer, Integer> localIndexOf = new LinkedHashMap<>();
        for (int k = 0; k < ownedIndices.length; k++) {
            localIndexOf.put(ownedIndices[k], k);
        }
        Map<Integer, Map<String, Tensor>> state = new LinkedHashMap<>();
        pendingLoad.forEach((index, entries) -> state.put(localIndexOf.get(index), entries));
        Map<Integer, Map<String, Tensor>> loaded = pendingLoad;
        pendingLoad = null;
        // The local groups' parameter indices with the options just loaded here.
        List<Map<String, Object>> groups = local.paramGroupDicts();
        for (int gi = 0; gi < groups.size(); gi++) {
            Map<String, Object> dict = new LinkedHashMap<>(paramGroups().get(gi).options());
            dict.put("params", groups.get(gi).get("params"));
            groups.set(gi, dict);
        }
        try {
            local.loadStateDict(new OptimizerStateDict(local.name(), state, groups));
        } finally {
            loaded.values().forEach(entries -> entries.values().forEach(Tensor::close));
        }
    }

    private void dropConsolidated() {
        if (consolidated != null) {
            consolidated.values().forEach(entries -> entries.values().forEach(Tensor::close));
            consolidated = null;
        }
    }

    /** Frees the local optimizer's state and any gathered or pending state. */
    @Override
    public void close() {
        super.close();
        local.close();
        dropConsolidated();
        if (pendingLoad != null) {
            pendingLoad.values().forEach(entries -> entries.values().forEach(Tensor::close));
            pendingLoad = null;
        }
    }

    /** One group's options per line, and the partition: "ZeroRedundancyOptimizer(rank 0 of 2 owns 3 of 5 parameters; AdamW(...))". */
    @Override
    public String toString() {
        return "ZeroRedundancyOptimizer(rank " + rank + " of " + group.size() + " owns " + ownedIndices.length + " of "
                + owners.length + " parameters; " + local + ")";
    }

}
