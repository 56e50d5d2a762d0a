package org.ddp4j.serialization;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.ddp4j.internal.AtomicFiles;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.LRScheduler;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.OptimizerStateDict;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * A training run's whole state in one file, the {@code torch.save({...})} idiom:
 *
 * <pre>{@code
 * new Checkpoint()
 *         .put("model", ddp.module())      // its state dict
 *         .put("optimizer", optimizer)     // momentum buffers, Adam moments, param groups
 *         .put("scheduler", scheduler)
 *         .put("epoch", epoch + 1).put("step", step)
 *         .put("rng", generator)           // e.g. the Dropout masks' generator
 *         .save(path);
 *
 * Checkpoint c = Checkpoint.load(path);
 * c.restore("model", model);
 * c.restore("optimizer", optimizer);
 * c.restore("scheduler", scheduler);
 * c.restore("rng", generator);
 * int epoch = c.getInt("epoch");
 * }</pre>
 *
 * <p>The file is safetensors (PyTorch reads it with {@code safetensors.torch.load_file}): each
 * entry's tensors are named {@code <key>/<name>} ({@code model/layer1.0.weight},
 * {@code optimizer/state.0.momentum_buffer}), and the metadata {@code ddp4j.checkpoint} holds the
 * rest as JSON: each entry's kind and non-tensor state (the optimizer's param groups, the
 * scheduler's {@code state_dict()}, a generator's state in hex, numbers and strings). It is written
 * atomically ({@link AtomicFiles}): a save that fails or is killed leaves the previous file whole.
 * Put and restore take the same objects; a {@link Stateful} carries any other state (e.g. a DDP
 * communication hook's).
 */
public final class Checkpoint {
    /** Metadata key of the entries' JSON. */
    public static final String METADATA_KEY = "ddp4j.checkpoint";

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Anything else with a state: tensors and JSON-friendly values (PyTorch's {@code Stateful} protocol). */
    public interface Stateful {
        /** The tensors of the state, by name (saved under {@code <key>/<name>}). */
        Map<String, Tensor> stateTensors();

        /** The rest of the state: numbers, strings, booleans, lists and maps of them. */
        Map<String, Object> stateValues();

        /**
         * Restores a state that stateTensors and stateValues gave (numbers may come back as other boxed types).
         *
         * @throws IllegalArgumentException if it is not such a state
         */
        void loadState(Map<String, Tensor> tensors, Map<String, Object> values);
    }

    private enum Kind { MODULE, OPTIMIZER, SCHEDULER, GENERATOR, STATEFUL, TENSORS, VALUE }

    private final Map<String, Map<String, Tensor>> tensors = new LinkedHashMap<>();
    private final Map<String, Map<String, Object>> entries = new LinkedHashMap<>();
    private final String source;

    /** An empty checkpoint to {@link #put} entries into. */
    public Checkpoint() {
        this.source = "the checkpoint";
    }

    private Checkpoint(String source) {
        this.source = source;
    }

    /** A module's state dict (parameters and buffers). Mirrors {@code {"model": model.state_dict()}}. */
    public Checkpoint put(String key, Module module) {
        Objects.requireNonNull(module, "module");
        return putStateDict(key, module.stateDict());
    }

    /** A module's state dict given as a map (e.g. gathered from shards); {@link #restore(String, Module)} loads it. */
    public Checkpoint putStateDict(String key, Map<String, Tensor> moduleStateDict) {
        return add(key, Kind.MODULE, moduleStateDict, Map.of());
    }

    /** An optimizer's state dict. */
    public Checkpoint put(String key, Optimizer optimizer) {
        return put(key, optimizer.stateDict());
    }

    /** An optimizer's state dict given as one (e.g. gathered from shards); {@link #restore(String, Optimizer)} loads it. */
    public Checkpoint put(String key, OptimizerStateDict state) {
        Map<String, Object> values = new LinkedHashMap<>();
        values.put(OptimizerStateDict.OPTIMIZER_KEY, state.optimizer());
        values.put(OptimizerStateDict.PARAM_GROUPS_KEY, state.paramGroups());
        return add(key, Kind.OPTIMIZER, state.tensors(), values);
    }

    /** A learning-rate scheduler's state dict. */
    public Checkpoint put(String key, LRScheduler scheduler) {
        return add(key, Kind.SCHEDULER, Map.of(), Map.of("state", scheduler.stateDict()));
    }

    /** A generator's state ({@link Generator#getState()}), so its stream continues where it was. */
    public Checkpoint put(String key, Generator generator) {
        return add(key, Kind.GENERATOR, Map.of(), Map.of("state", HexFormat.of().formatHex(generator.getState())));
    }

    /** Any other state. */
    public Checkpoint put(String key, Stateful state) {
        return add(key, Kind.STATEFUL, state.stateTensors(), state.stateValues());
    }

    /**
     * Named tensors, e.g. a state dict that some object gives as a map (a DDP communication hook's
     * {@code stateDict()}); {@link #tensors(String)} returns them.
     */
    public Checkpoint put(String key, Map<String, Tensor> namedTensors) {
        return add(key, Kind.TENSORS, namedTensors, Map.of());
    }

    /** A number, string or boolean (e.g. the epoch and step counters). */
    public Checkpoint put(String key, Object value) {
        if (!(value instanceof Number || value instanceof String || value instanceof Boolean)) {
            throw new IllegalArgumentException("Checkpoint.put(\"" + key + "\", ...): a " + (value == null ? "null"
                    : value.getClass().getName()) + " is none of what a checkpoint holds: a Module, Optimizer,"
                    + " LRScheduler, Generator, Checkpoint.Stateful, number, string or boolean");
        }
        if ((value instanceof Double || value instanceof Float) && !Double.isFinite(((Number) value).doubleValue())) {
            throw new IllegalArgumentException("Checkpoint.put(\"" + key + "\", " + value + "): only finite numbers (the"
                    + " metadata is JSON, which has no NaN or infinity)");
        }
        return add(key, Kind.VALUE, Map.of(), Map.of("value", value));
    }

    private Checkpoint add(String key, Kind kind, Map<String, Tensor> t, Map<String, Object> values) {
        Objects.requireNonNull(key, "key");
        if (key.isEmpty() || key.contains("/")) {
            throw new IllegalArgumentException("Checkpoint: key '" + key + "' must be non-empty and without '/' (it"
                    + " prefixes the entry's tensor names as key/name)");
        }
        if (entries.containsKey(key)) {
            throw new IllegalArgumentException("Checkpoint: key '" + key + "' was put twice; use one key per entry");
        }
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("kind", kind.name().toLowerCase(java.util.Locale.ROOT));
        entry.putAll(values);
        entries.put(key, entry);
        tensors.put(key, new LinkedHashMap<>(t));
        return this;
    }

    /** The keys, in the order they were put. */
    public Set<String> keys() {
        return entries.keySet();
    }

    /**
     * Writes every entry to {@code file} atomically.
     *
     * @throws java.io.UncheckedIOException naming the file when it cannot be written (the previous file stays whole)
     * @throws IllegalStateException if a tensor of an entry is closed (nothing is written)
     */
    public void save(Path file) {
        Map<String, Tensor> all = new LinkedHashMap<>();
        tensors.forEach((key, t) -> t.forEach((name, tensor) -> all.put(key + "/" + name, tensor)));
        String json;
        try {
            json = JSON.writeValueAsString(entries);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("Checkpoint: an entry's values cannot be written as JSON: "
                    + e.getOriginalMessage(), e);
        }
        // "format": "pt" is what safetensors.torch.save_file writes; loaders such as transformers check it
        SafeTensors.saveFile(all, file, Map.of("format", "pt", METADATA_KEY, json));
    }

    /**
     * Reads a checkpoint that {@link #save} wrote; its tensors are new CPU tensors in the current
     * {@link org.ddp4j.tensor.Tensors#scope()}.
     *
     * @throws java.io.UncheckedIOException naming the file when it is missing or not a valid safetensors file
     * @throws IllegalArgumentException naming the file when it is not a checkpoint (no {@value #METADATA_KEY} metadata)
     */
    public static Checkpoint load(Path file) {
        Map<String, String> metadata = SafeTensors.loadMetadata(file);
        String json = metadata.get(METADATA_KEY);
        if (json == null) {
            throw new IllegalArgumentException(file + " is not a checkpoint written by Checkpoint.save: its metadata has"
                    + " no '" + METADATA_KEY + "' (a bare state dict? load it with Module.loadStateDict(SafeTensors.loadFile(...)))");
        }
        Checkpoint c = new Checkpoint(file.toString());
        try {
            c.entries.putAll(JSON.readValue(json, new TypeReference<LinkedHashMap<String, Map<String, Object>>>() {}));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(file + ": metadata '" + METADATA_KEY + "' is not the JSON Checkpoint.save"
                    + " writes: " + e.getOriginalMessage(), e);
        }
        c.entries.keySet().forEach(key -> c.tensors.put(key, new LinkedHashMap<>()));
        SafeTensors.loadFile(file).forEach((name, t) -> {
            int slash = name.indexOf('/');
            Map<String, Tensor> owner = slash > 0 ? c.tensors.get(name.substring(0, slash)) : null;
            if (owner == null) {
                throw new IllegalArgumentException(file + ": tensor '" + name + "' belongs to no entry of the checkpoint");
            }
            owner.put(name.substring(slash + 1), t);
        });
        return c;
    }

    /** Loads entry {@code key} into the module (strict: every parameter and buffer, no other). */
    public void restore(String key, Module module) {
        entry(key, Kind.MODULE);
        module.loadStateDict(tensors.get(key));
    }

    /** Loads entry {@code key} into the optimizer (the same kind and parameter layout). */
    @SuppressWarnings("unchecked")
    public void restore(String key, Optimizer optimizer) {
        Map<String, Object> e = entry(key, Kind.OPTIMIZER);
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put(OptimizerStateDict.OPTIMIZER_KEY, String.valueOf(e.get(OptimizerStateDict.OPTIMIZER_KEY)));
        try {
            metadata.put(OptimizerStateDict.PARAM_GROUPS_KEY, JSON.writeValueAsString(e.get(OptimizerStateDict.PARAM_GROUPS_KEY)));
        } catch (JsonProcessingException ex) {
            throw new IllegalArgumentException(source + ": entry '" + key + "' has unreadable param groups", ex);
        }
        optimizer.loadStateDict(OptimizerStateDict.of(tensors.get(key), metadata, source + " entry '" + key + "'"));
    }

    /** Loads entry {@code key} into the scheduler. */
    @SuppressWarnings("unchecked")
    public void restore(String key, LRScheduler scheduler) {
        Object state = entry(key, Kind.SCHEDULER).get("state");
        if (!(state instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException(source + ": entry '" + key + "' holds no scheduler state");
        }
        scheduler.loadStateDict((Map<String, ?>) map);
    }

    /** Sets the generator to the state of entry {@code key}. */
    public void restore(String key, Generator generator) {
        Object hex = entry(key, Kind.GENERATOR).get("state");
        try {
            generator.setState(HexFormat.of().parseHex(String.valueOf(hex)));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": entry '" + key + "' holds no generator state: " + e.getMessage(), e);
        }
    }

    /** Loads entry {@code key} into a {@link Stateful}. */
    public void restore(String key, Stateful state) {
        Map<String, Object> values = new LinkedHashMap<>(entry(key, Kind.STATEFUL));
        values.remove("kind");
        state.loadState(tensors.get(key), values);
    }

    /** The tensors of entry {@code key} put as a map (in the current scope, after {@link #load}). */
    public Map<String, Tensor> tensors(String key) {
        entry(key, Kind.TENSORS);
        return java.util.Collections.unmodifiableMap(tensors.get(key));
    }

    /** Whether the checkpoint has entry {@code key}. */
    public boolean has(String key) {
        return entries.containsKey(key);
    }

    /**
     * The number stored under {@code key}, as an int.
     *
     * @throws IllegalArgumentException if there is no such entry, it is not a number, or it does not fit an int
     */
    public int getInt(String key) {
        return Math.toIntExact(getLong(key));
    }

    /** The number stored under {@code key}, as a long. */
    public long getLong(String key) {
        Object v = entry(key, Kind.VALUE).get("value");
        if (!(v instanceof Number n) || n.doubleValue() != Math.rint(n.doubleValue())) {
            throw new IllegalArgumentException(source + ": entry '" + key + "' is " + v + ", not a whole number");
        }
        return n.longValue();
    }

    /** The number stored under {@code key}, as a double. */
    public double getDouble(String key) {
        Object v = entry(key, Kind.VALUE).get("value");
        if (!(v instanceof Number n)) {
            throw new IllegalArgumentException(source + ": entry '" + key + "' is " + v + ", not a number");
        }
        return n.doubleValue();
    }

    /** The string (or the text of the number or boolean) stored under {@code key}. */
    public String getString(String key) {
        return String.valueOf(entry(key, Kind.VALUE).get("value"));
    }

    private Map<String, Object> entry(String key, Kind kind) {
        Map<String, Object> e = entries.get(key);
        if (e == null) {
            throw new IllegalArgumentException(source + " has no entry '" + key + "'; it has " + entries.keySet());
        }
        String k = kind.name().toLowerCase(java.util.Locale.ROOT);
        if (!k.equals(e.get("kind"))) {
            throw new IllegalArgumentException(source + ": entry '" + key + "' is a " + e.get("kind") + ", not a " + k);
        }
        return e;
    }
}
