package org.ddp4j.distributed.checkpoint;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.fsdp.FSDPModule;
import org.ddp4j.distributed.optim.ZeroRedundancyOptimizer;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.OptimizerStateDict;
import org.ddp4j.internal.AtomicFiles;
import org.ddp4j.serialization.Checkpoint;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * A training state saved by every rank at once, each writing what it owns, and loadable at any
 * world size. Mirrors {@code torch.distributed.checkpoint.save / load} for a model trained with
 * {@link ZeroRedundancyOptimizer} (each rank writes the parameters it owns and their optimizer
 * state, rank 0 also the buffers) or with fully_shard (each rank writes its rows of every parameter
 * and state tensor), each rank to its own safetensors file, so no rank gathers the whole state.
 *
 * <p>Layout of the checkpoint folder: {@code metadata.json} (format, version, the world size
 * that wrote it, the optimizer's class and param groups, and the folder of the current shards)
 * and {@code v-<id>/shard-<rank>.safetensors}, tensors named {@code model/<name>} and
 * {@code optimizer/state.<index>.<name>}. A save writes a new {@code v-<id>} folder and then
 * replaces {@code metadata.json} atomically, so a save that fails on any rank, or is killed,
 * leaves the previous checkpoint whole and loadable; the folders of earlier saves are deleted
 * after the switch. Every rank must see the folder (one host, or a shared file system).
 */
public final class ShardedCheckpoint {
    /** The metadata's format name and version. */
    public static final String FORMAT = "ddp4j.sharded_checkpoint";
    public static final int VERSION = 1;
    private static final String METADATA = "metadata.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private ShardedCheckpoint() {}

    /**
     * Writes the model and the optimizer's state into {@code dir}, each rank its own part. A
     * collective: every rank of {@code group} calls it with the same folder.
     *
     * @throws IllegalStateException when the save failed on any rank (every rank throws, naming the
     *     ranks and this rank's cause); the previous checkpoint in {@code dir} is left as it was
     */
    public static void save(Path dir, Module model, ZeroRedundancyOptimizer optimizer, ProcessGroup group) {
        write(dir, () -> ownTensors(model, optimizer, group.rank()), optimizer, ZERO, group);
    }

    /**
     * Writes a fully_shard model and the optimizer over its shards into {@code dir}: each rank
     * its own rows of every parameter and of every optimizer state tensor (the padding left out),
     * rank 0 also the buffers and the step counts. A collective: every rank of the model's group
     * calls it with the same folder. Mirrors {@code torch.distributed.checkpoint.save} of FSDP2's
     * sharded state dicts.
     *
     * @param optimizer an optimizer over {@code model.parameters()} (the shards), in that order
     * @throws IllegalStateException when the save failed on any rank (every rank throws, naming the
     *     ranks and this rank's cause); the previous checkpoint in {@code dir} is left as it was
     * @throws IllegalArgumentException when the optimizer does not step the model's shards
     */
    public static void save(Path dir, FSDPModule model, Optimizer optimizer) {
        write(dir, () -> ownRows(model, optimizer), optimizer, FULLY_SHARD, model.processGroup());
    }

    private static void write(Path dir, Supplier<Map<String, Tensor>> own, Optimizer optimizer, String sharding,
            ProcessGroup group) {
        int rank = group.rank();
        String version = "v-" + HexFormat.of().toHexDigits(agreedId(group));
        Path folder = dir.resolve(version);
        String cause = null;
        try (var scope = Tensors.scope()) {
            Files.createDirectories(folder);
            SafeTensors.saveFile(own.get(), folder.resolve(shardName(rank)));
        } catch (RuntimeException | IOException e) {
            cause = e.toString();
        }
        List<Integer> failed = failedRanks(group, cause == null);
        if (failed.isEmpty() && rank == 0) {
            try {
                writeMetadata(dir, version, group.size(), optimizer, sharding);
                deleteOtherVersions(dir, version);
            } catch (RuntimeException e) {
                cause = e.toString();
            }
        }
        failed = failedRanks(group, cause == null);
        if (!failed.isEmpty()) {
            if (rank == 0) {
                AtomicFiles.deleteTree(folder);
            }
            throw new IllegalStateException("ShardedCheckpoint.save to " + dir + " failed on rank" + (failed.size() > 1
                    ? "s " : " ") + failed + (cause != null ? " (here: " + cause + ")" : "") + "; the previous"
                    + " checkpoint in " + dir + ", if any, is untouched and still loads");
        }
    }

    /** A random id rank 0 draws and broadcasts, so every rank writes into the same new folder. */
    private static long agreedId(ProcessGroup group) {
        try (var scope = Tensors.scope()) {
            Tensor id = Tensor.ofLongs(new long[] {ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE}, 1)
                    .to(group.device());
            group.broadcast(id, 0).await();
            return id.toLongArray()[0];
        }
    }

    /** Every rank's verdict: the ranks that failed (an all-gather of one flag each). */
    private static List<Integer> failedRanks(ProcessGroup group, boolean ok) {
        try (var scope = Tensors.scope()) {
            Tensor mine = Tensor.full(ok ? 1 : 0, DType.FLOAT32, group.device(), 1);
            Tensor all = Tensor.full(0, DType.FLOAT32, group.device(), group.size());
            group.allGatherIntoTensor(all, mine).await();
            float[] flags = all.toFloatArray();
            List<Integer> failed = new ArrayList<>();
            for (int r = 0; r < flags.length; r++) {
                if (flags[r] != 1) {
                    failed.add(r);
                }
            }
            return failed;
        }
    }

    private static String shardName(int rank) {
        return "shard-" + rank + ".safetensors";
    }

    /** The parameters this rank owns and their optimizer state; on rank 0 also the buffers and parameters no optimizer holds. */
    private static Map<String, Tensor> ownTensors(Module model, ZeroRedundancyOptimizer optimizer, int rank) {
        Map<Tensor, Boolean> optimized = new IdentityHashMap<>();
        optimizer.params().forEach(p -> optimized.put(p, true));
        Map<String, Tensor> out = new LinkedHashMap<>();
        model.stateDict().forEach((name, t) -> {
            if ((optimized.containsKey(t) ? optimizer.ownerOf(t) : 0) == rank) {
                out.put("model/" + name, t);
            }
        });
        optimizer.ownedState().forEach((index, entries) ->
                entries.forEach((name, t) -> out.put("optimizer/state." + index + "." + name, t)));
        return out;
    }

    /**
     * This rank's rows of each shard and of each optimizer state tensor shaped like it, as new
     * tensors; on rank 0 also the buffers and the step counts.
     */
    private static Map<String, Tensor> ownRows(FSDPModule model, Optimizer optimizer) {
        int rank = model.processGroup().rank();
        Map<String, Tensor> out = new LinkedHashMap<>();
        Map<String, Tensor> shards = model.namedParameters();
        shards.forEach((name, shard) -> {
            Tensor rows = realRows(shard, model.placement(shard));
            if (rows != null) {
                out.put("model/" + name, rows);
            }
        });
        if (rank == 0) {
            model.namedBuffers().forEach((name, t) -> out.put("model/" + name, t));
        }
        List<Tensor> params = optimizer.params();
        Map<Tensor, Boolean> modelShards = new IdentityHashMap<>();
        shards.values().forEach(t -> modelShards.put(t, true));
        if (params.size() != modelShards.size() || !params.stream().allMatch(modelShards::containsKey)) {
            throw new IllegalArgumentException("ShardedCheckpoint.save: the optimizer steps " + params.size() + " tensors,"
                    + " not the model's " + modelShards.size() + " shards; build it over model.parameters()");
        }
        optimizer.stateDict().state().forEach((index, entries) -> entries.forEach((name, t) -> {
            String key = "optimizer/state." + index + "." + name;
            if (optimizer.isStepCount(name)) {
                if (rank == 0) {
                    out.put(key, t);
                }
            } else {
                Tensor rows = realRows(t, model.placement(params.get(index)));
                if (rows != null) {
                    out.put(key, rows);
                }
            }
        }));
        return out;
    }

    /**
     * A copy of the first realRows rows of t (a shard or a tensor shaped like it) in the current
     * scope, or null when there are none.
     */
    private static Tensor realRows(Tensor t, FSDPModule.ShardPlacement placement) {
        if (placement.realRows() == 0) {
            return null;
        }
        long[] shape = t.shape();
        shape[0] = placement.realRows();
        // A 0-dim parameter's shard is its one value as [1]: written with the parameter's own shape.
        long[] saved = placement.fullShape().length == 0 ? new long[0] : shape;
        try (Tensor rows = t.flatSlice(0, shape)) {
            return Tensor.zeros(t.dtype(), saved).copyFrom(rows);
        }
    }

    private static void writeMetadata(Path dir, String version, int world, Optimizer optimizer, String sharding) {
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("format", FORMAT);
        metadata.put("version", VERSION);
        metadata.put("sharding", sharding);
        metadata.put("shards", version);
        metadata.put("world_size", world);
        metadata.put("optimizer", optimizer.name());
        metadata.put("param_groups", optimizer.paramGroupDicts());
        byte[] bytes;
        try {
            bytes = JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(metadata);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        AtomicFiles.write(dir.resolve(METADATA), channel -> channel.write(ByteBuffer.wrap(bytes)));
    }

    private static void deleteOtherVersions(Path dir, String keep) {
        try (Stream<Path> entries = Files.list(dir)) {
            entries.filter(p -> p.getFileName().toString().startsWith("v-") && !p.getFileName().toString().equals(keep))
                    .forEach(AtomicFiles::deleteTree); // unused folders: best effort
        } catch (IOException e) {
            // what is left is unused: the metadata names the current shards
        }
    }

    /** What metadata.json holds; sharding is {@link #ZERO} or {@link #FULLY_SHARD}. */
    private record Metadata(Path shards, int worldSize, String optimizer, List<Map<String, Object>> paramGroups,
            String sharding) {}

    /** The sharding of a checkpoint: whole parameters by owner (ZeRO), or rows of every parameter (fully_shard). */
    private static final String ZERO = "zero";
    private static final String FULLY_SHARD = "fully_shard";

    private static Metadata readMetadata(Path dir) {
        Path file = dir.resolve(METADATA);
        Map<String, Object> m;
        try {
            m = JSON.readValue(Files.readString(file, StandardCharsets.UTF_8), new TypeReference<LinkedHashMap<String, Object>>() {});
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the sharded checkpoint " + dir + ": " + file + " is missing or not"
                    + " JSON (" + e.getMessage() + "); a folder ShardedCheckpoint.save wrote has it", e);
        }
        if (!FORMAT.equals(m.get("format")) || !(m.get("version") instanceof Integer v) || v != VERSION
                || !(m.get("shards") instanceof String shards) || !(m.get("world_size") instanceof Integer world)
                || !(m.get("optimizer") instanceof String name) || !(m.get("param_groups") instanceof List<?> groups)) {
            throw new IllegalArgumentException(file + " is not the metadata of a " + FORMAT + " version " + VERSION
                    + " (format " + m.get("format") + ", version " + m.get("version") + ")");
        }
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> paramGroups = (List<Map<String, Object>>) groups;
        return new Metadata(dir.resolve(shards), world, name, paramGroups, (String) m.getOrDefault("sharding", ZERO));
    }

    /** Every tensor of the checkpoint whose name {@code keep} accepts, by name (new tensors outside any scope). */
    private static Map<String, Tensor> readTensors(Metadata metadata, Predicate<String> keep) {
        Map<String, List<Tensor>> pieces = new LinkedHashMap<>();
        for (int r = 0; r < metadata.worldSize(); r++) {
            try (var scope = Tensors.scope()) {
                SafeTensors.loadFile(metadata.shards().resolve(shardName(r))).forEach((name, t) -> {
                    if (keep.test(name)) {
                        pieces.computeIfAbsent(name, n -> new ArrayList<>()).add(t.keep());
                    }
                });
            }
        }
        // fully_shard: each rank wrote its rows, in rank order; ZeRO: one rank wrote each name.
        Map<String, Tensor> out = new LinkedHashMap<>();
        pieces.forEach((name, parts) -> out.put(name, parts.size() == 1 ? parts.get(0) : concatRows(parts)));
        return out;
    }

    /** The pieces stacked along dim 0 into a new tensor; the pieces are closed. */
    private static Tensor concatRows(List<Tensor> parts) {
        long[] shape = parts.get(0).shape();
        long rows = 0;
        for (Tensor p : parts) {
            rows += p.size(0);
        }
        shape[0] = rows;
        Tensor out = Tensor.zeros(parts.get(0).dtype(), shape).keep();
        long at = 0;
        for (Tensor p : parts) {
            try (p; Tensor dst = out.flatSlice(at, p.numel())) {
                dst.copyFrom(p);
                at += p.numel();
            }
        }
        return out;
    }

    /**
     * Loads a checkpoint written by {@link #save} at any world size: the whole model on every
     * rank, and into {@code optimizer} the state of the parameters this rank owns now. A
     * collective in spirit (every rank calls it), though it sends nothing.
     *
     * @throws java.io.UncheckedIOException naming the file when the metadata or a shard is missing or unreadable
     * @throws IllegalArgumentException when the checkpoint does not fit the model or the optimizer
     *     (the model's or the optimizer's own message)
     */
    public static void load(Path dir, Module model, ZeroRedundancyOptimizer optimizer, ProcessGroup group) {
        Metadata metadata = readMetadata(dir);
        if (!ZERO.equals(metadata.sharding())) {
            throw new IllegalArgumentException(dir + " holds a fully_shard checkpoint: load it with"
                    + " ShardedCheckpoint.load(dir, fsdpModule, optimizer), or consolidate it and load the file");
        }
        List<Tensor> params = optimizer.params();
        Map<String, Tensor> tensors = readTensors(metadata, name -> name.startsWith("model/")
                || (name.startsWith("optimizer/state.") && ownedHere(name, params, optimizer, group.rank())));
        try {
            Map<String, Tensor> modelState = new LinkedHashMap<>();
            Map<Integer, Map<String, Tensor>> state = new LinkedHashMap<>();
            split(tensors, modelState, state);
            model.loadStateDict(modelState);
            optimizer.loadStateDict(new OptimizerStateDict(metadata.optimizer(), state, metadata.paramGroups()));
        } finally {
            tensors.values().forEach(Tensor::close);
        }
    }

    /**
     * Loads a checkpoint written by {@link #save(Path, FSDPModule, Optimizer)} at any world size:
     * each parameter's rows from every rank that wrote them are joined and this model's ranks take
     * their new rows, of the parameters and of the optimizer state alike. Every rank reads the
     * whole checkpoint into memory (the model's full parameters and optimizer state, once), then
     * keeps its rows. A collective: every rank of the model's group calls it.
     *
     * @throws java.io.UncheckedIOException naming the file when the metadata or a shard is missing or unreadable
     * @throws IllegalArgumentException when the checkpoint was written by ZeRO, or does not fit the
     *     model or the optimizer (the model's or the optimizer's own message)
     */
    public static void load(Path dir, FSDPModule model, Optimizer optimizer) {
        Metadata metadata = readMetadata(dir);
        if (!FULLY_SHARD.equals(metadata.sharding())) {
            throw new IllegalArgumentException(dir + " holds a ZeroRedundancyOptimizer checkpoint: load it with"
                    + " ShardedCheckpoint.load(dir, model, zeroOptimizer, group), or consolidate it and load the file");
        }
        Map<String, Tensor> tensors = readTensors(metadata, name -> true);
        try {
            Map<String, Tensor> modelState = new LinkedHashMap<>();
            Map<Integer, Map<String, Tensor>> state = new LinkedHashMap<>();
            split(tensors, modelState, state);
            model.loadStateDict(modelState, true);
            List<Tensor> params = optimizer.params();
            Map<Integer, Map<String, Tensor>> local = new LinkedHashMap<>();
            state.forEach((index, entries) -> {
                if (index >= params.size()) {
                    throw new IllegalArgumentException("the checkpoint in " + dir + " has optimizer state for parameter "
                            + index + " but the optimizer steps " + params.size());
                }
                Map<String, Tensor> mine = new LinkedHashMap<>();
                entries.forEach((name, full) -> mine.put(name, optimizer.isStepCount(name) ? full
                        : rowsOf(full, model.placement(params.get(index)))));
                local.put(index, mine);
            });
            try {
                optimizer.loadStateDict(new OptimizerStateDict(metadata.optimizer(), local, metadata.paramGroups()));
            } finally {
                local.values().forEach(m -> m.values().forEach(t -> {
                    if (!tensors.containsValue(t)) {
                        t.close();
                    }
                }));
            }
        } finally {
            tensors.values().forEach(Tensor::close);
        }
    }

    /** This rank's shard (with zero padding) cut from a whole state tensor of the parameter's rows. */
    private static Tensor rowsOf(Tensor full, FSDPModule.ShardPlacement placement) {
        long rows = placement.fullShape().length == 0 ? 1 : placement.fullShape()[0];
        if (full.numel() % rows != 0 || (full.dim() > 0 && full.size(0) != rows)) {
            throw new IllegalArgumentException("optimizer state " + full.describe() + " does not match a parameter of "
                    + java.util.Arrays.toString(placement.fullShape()));
        }
        long rowNumel = full.numel() / rows;
        long[] shape = placement.fullShape().length == 0 ? new long[] {1} : placement.fullShape();
        shape[0] = placement.rowsPerShard();
        Tensor out = Tensor.zeros(full.dtype(), shape).keep();
        if (placement.realRows() > 0) {
            try (Tensor dst = out.flatSlice(0, placement.realRows() * rowNumel);
                    Tensor src = full.flatSlice(placement.rowOffset() * rowNumel, placement.realRows() * rowNumel)) {
                dst.copyFrom(src);
            }
        }
        return out;
    }

    private static boolean ownedHere(String name, List<Tensor> params, ZeroRedundancyOptimizer optimizer, int rank) {
        int index = Integer.parseInt(name.split("\\.")[1]);
        return index < params.size() && optimizer.ownerOf(params.get(index)) == rank;
    }

    /** Routes model/NAME and optimizer/state.INDEX.NAME into the two state dicts. */
    private static void split(Map<String, Tensor> tensors, Map<String, Tensor> model, Map<Integer, Map<String, Tensor>> state) {
        tensors.forEach((name, t) -> {
            if (name.startsWith("model/")) {
                model.put(name.substring("model/".length()), t);
            } else {
                String[] parts = name.substring("optimizer/state.".length()).split("\\.", 2);
                state.computeIfAbsent(Integer.parseInt(parts[0]), i -> new LinkedHashMap<>()).put(parts[1], t);
            }
        });
    }

    /**
     * Writes the checkpoint in {@code dir} as one {@link Checkpoint} file with entries
     * {@code "model"} and {@code "optimizer"}, loadable without ranks into the model and a plain
     * optimizer of the wrapped class ({@code Checkpoint.load(file).restore("optimizer", adamW)}).
     * Mirrors {@code torch.distributed.checkpoint.format_utils.dcp_to_torch_save}.
     *
     * @throws java.io.UncheckedIOException naming the file when the metadata or a shard is missing or
     *     unreadable, or the file cannot be written
     */
    public static void consolidate(Path dir, Path file) {
        Metadata metadata = readMetadata(dir);
        Map<String, Tensor> tensors = readTensors(metadata, name -> true);
        try {
            Map<String, Tensor> modelState = new LinkedHashMap<>();
            Map<Integer, Map<String, Tensor>> state = new LinkedHashMap<>();
            split(tensors, modelState, state);
            new Checkpoint().putStateDict("model", modelState)
                    .put("optimizer", new OptimizerStateDict(metadata.optimizer(), state, metadata.paramGroups()))
                    .save(file);
        } finally {
            tensors.values().forEach(Tensor::close);
        }
    }
}
