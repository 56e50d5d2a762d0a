package org.ddp4j.distributed.fsdp;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import org.ddp4j.internal.MemoryPlan;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.utils.ClipGradNorm;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * {@code torch.distributed.fsdp.fully_shard} (FSDP2): shards a module's parameters over the ranks
 * so that each rank keeps {@code 1 / worldSize} of the parameters, gradients and optimizer state.
 * Apply it to each transformer block first, then to the whole model, and train through what the
 * last call returns:
 *
 * <pre>{@code
 * for (GPT2Block block : model.transformer().h()) {
 *     FullyShard.fullyShard(block);
 * }
 * FSDPModule fsdp = FullyShard.fullyShard(model);   // in place of new DistributedDataParallel(model)
 * AdamW opt = new AdamW(fsdp.parameters(), AdamW.Options.defaults().lr(6e-4));
 * }</pre>
 *
 * Each call makes one unit: the parameters of the module that no earlier call took. A unit is
 * gathered by one all-gather when the forward or backward first reads it and freed after (see
 * {@link FSDPModule}); its gradients are averaged by one reduce-scatter. Parameters tied across
 * units are not supported (tie them inside one unit, as PyTorch requires: GPT-2's {@code wte} and
 * {@code lm_head} both sit in the root).
 */
public final class FullyShard {
    /**
     * Each sharded module's handle, and each sharded parameter's. Weak both ways: a module keeps its
     * handle alive through its parameters (their gather supplier holds the unit), so neither map
     * keeps a model the program dropped.
     */
    private static final Map<Module, WeakReference<FSDPModule>> SHARDED = Collections.synchronizedMap(new WeakHashMap<>());
    private static final Map<Tensor, WeakReference<FSDPModule>> OWNER = Collections.synchronizedMap(new WeakHashMap<>());

    private FullyShard() {}

    /** {@link #fullyShard(Module, FullyShardOptions)} with PyTorch's defaults. */
    public static FSDPModule fullyShard(Module module) {
        return fullyShard(module, FullyShardOptions.defaults());
    }

    /**
     * Shards {@code module}'s parameters not yet in a unit (rank 0's values, broadcast first, as
     * DistributedDataParallel starts) and returns the handle that trains it. A collective: every
     * rank calls it in the same order with the same module structure. Mirrors
     * {@code fully_shard(module, mesh, reshard_after_forward, mp_policy)}.
     *
     * @throws IllegalArgumentException if the module was sharded already, a parameter is not a
     *     float32 CPU tensor or is empty, or a nested unit uses another group
     * @throws IllegalStateException if no group is given and none was initialised, or (with a memory
     *     budget, see DDP4J_MEMORY_PER_RANK) the shards and the largest gathered unit do not fit
     */
    public static FSDPModule fullyShard(Module module, FullyShardOptions options) {
        if (of(module) != null) {
            throw new IllegalArgumentException("fullyShard: " + module.getClass().getSimpleName() + " is sharded already");
        }
        List<FSDPModule> nested = new ArrayList<>();
        findNested(module, nested);
        Map<Tensor, Boolean> taken = new IdentityHashMap<>();
        for (FSDPModule n : nested) {
            n.module().namedParameters().values().forEach(t -> taken.put(t, Boolean.TRUE));
        }
        List<Tensor> own = new ArrayList<>();
        for (Map.Entry<String, Tensor> named : module.namedParameters().entrySet()) {
            Tensor t = named.getValue();
            if (taken.containsKey(t)) {
                continue; // a nested unit's
            }
            FSDPModule owner = ownerOf(t);
            if (owner != null) {
                throw new IllegalArgumentException("fullyShard: parameter " + named.getKey() + " of "
                        + module.getClass().getSimpleName() + " is in the unit of " + owner.module().getClass().getSimpleName()
                        + " already (a module that contains this one, or a parameter tied across units): apply fullyShard"
                        + " to inner modules before outer ones, and keep tied parameters inside one unit");
            }
            if (t.device().isCuda()) {
                throw new IllegalArgumentException("fullyShard: parameter " + t.describe() + " is on a GPU; ddp4j's "
                        + "fully_shard shards CPU modules (use DistributedDataParallel with NCCL on GPUs)");
            }
            own.add(t);
        }
        checkMemory(nested, own, options);
        FSDPModule fsdp = new FSDPModule(module, nested, own, options);
        SHARDED.put(module, new WeakReference<>(fsdp));
        for (Tensor t : own) {
            OWNER.put(t, new WeakReference<>(fsdp));
        }
        List<Tensor> shards = new ArrayList<>();
        for (FSDPParamGroup.ShardedParam p : fsdp.units().get(fsdp.units().size() - 1).params()) {
            shards.add(p.shard());
        }
        ClipGradNorm.registerShards(shards, fsdp.normCombiner());
        // The full parameters just freed would stay mapped in the allocator's cache.
        Tensors.emptyCache();
        return fsdp;
    }

    /** The outermost sharded modules below module (not module itself), in tree order. */
    private static void findNested(Module module, List<FSDPModule> out) {
        for (Module child : module.namedChildren().values()) {
            FSDPModule sharded = of(child);
            if (sharded != null && sharded.isRoot()) {
                out.add(sharded);
            } else if (sharded == null) {
                findNested(child, out);
            }
        }
    }

    /** The handle fullyShard returned for module, or null when it is not sharded. */
    public static FSDPModule of(Module module) {
        WeakReference<FSDPModule> ref = SHARDED.get(module);
        return ref == null ? null : ref.get();
    }

    private static FSDPModule ownerOf(Tensor parameter) {
        WeakReference<FSDPModule> ref = OWNER.get(parameter);
        return ref == null ? null : ref.get();
    }

    /** Forgets a closed handle: its module and parameters may be sharded again. */
    static void forget(FSDPModule fsdp) {
        SHARDED.remove(fsdp.module());
        synchronized (OWNER) {
            OWNER.values().removeIf(ref -> ref.get() == fsdp);
        }
    }

    /** Plans the shards of every unit and the largest unit gathered before anything is sharded. */
    private static void checkMemory(List<FSDPModule> nested, List<Tensor> own, FullyShardOptions options) {
        int world = options.resolvedProcessGroup().size();
        long shardBytes = shardBytes(own, world);
        long largestUnit = 4 * numel(own);
        for (FSDPModule n : nested) {
            for (FSDPParamGroup unit : n.units()) {
                shardBytes += 4 * unit.packedNumel();
                largestUnit = Math.max(largestUnit, 4 * unit.unshardedNumel());
            }
        }
        Map<String, Long> parts = new LinkedHashMap<>();
        parts.put("parameter shards", shardBytes);
        parts.put("gradient shards", shardBytes);
        parts.put("the largest unit gathered with its gradients and the all-gather buffer", 3 * largestUnit);
        MemoryPlan.check("fully_shard", parts, () -> "shard over more ranks, or apply fullyShard to smaller modules (each"
                + " transformer block) before the root");
    }

    private static long shardBytes(List<Tensor> tensors, int world) {
        long bytes = 0;
        for (Tensor t : tensors) {
            long rows = t.dim() == 0 ? 1 : t.size(0);
            bytes += 4 * ((rows + world - 1) / world) * (t.numel() / Math.max(1, rows));
        }
        return bytes;
    }

    private static long numel(List<Tensor> tensors) {
        long n = 0;
        for (Tensor t : tensors) {
            n += t.numel();
        }
        return n;
    }
}
