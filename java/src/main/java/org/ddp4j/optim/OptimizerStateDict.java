package org.ddp4j.optim;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Tensor;

/**
 * An optimizer's state, shaped as PyTorch's {@code optimizer.state_dict()}: {@code state} maps a
 * parameter's index (its position in the optimizer's parameter list) to its per-parameter
 * tensors (SGD: {@code momentum_buffer}); {@code paramGroups} holds each group's
 * hyper-parameters (SGD: {@code lr}, {@code momentum}, {@code dampening}, {@code weight_decay},
 * {@code nesterov}, as Double and Boolean) and {@code params}, the list of its parameter indices.
 *
 * <p>As a safetensors file ({@link #save}, {@link #load}): tensors named
 * {@code state.<index>.<name>} (e.g. {@code state.0.momentum_buffer}); metadata
 * {@code optimizer} (the class, e.g. {@code SGD}) and {@code param_groups} (the groups as JSON,
 * e.g. {@code [{"lr":0.05,"momentum":0.9,...,"params":[0,1,...]}]}).
 *
 * @param optimizer the optimizer's class name, e.g. {@code SGD} (a state dict loads only into the same kind)
 * @param state parameter index to state name to tensor
 * @param paramGroups each group's hyper-parameters and {@code params}
 */
public record OptimizerStateDict(String optimizer, Map<Integer, Map<String, Tensor>> state,
        List<Map<String, Object>> paramGroups) {
    /** Metadata key of the optimizer's class name. */
    public static final String OPTIMIZER_KEY = "optimizer";
    /** Metadata key of the parameter groups (JSON). */
    public static final String PARAM_GROUPS_KEY = "param_groups";

    private static final ObjectMapper JSON = new ObjectMapper();

    public OptimizerStateDict {
        state = Collections.unmodifiableMap(new TreeMap<>(state));
        paramGroups = List.copyOf(paramGroups);
    }

    /** The tensors under their file names {@code state.<index>.<name>}, by index. */
    public Map<String, Tensor> tensors() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        state.forEach((index, entries) -> entries.forEach((name, t) -> out.put("state." + index + "." + name, t)));
        return out;
    }

    /** The safetensors metadata: {@code optimizer} and {@code param_groups} as JSON. */
    public Map<String, String> metadata() {
        try {
            return Map.of(OPTIMIZER_KEY, optimizer, PARAM_GROUPS_KEY, JSON.writeValueAsString(paramGroups));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("param_groups cannot be written as JSON: " + e.getOriginalMessage(), e);
        }
    }

    /**
     * Writes this state to {@code file} in the safetensors format, atomically (see
     * {@link SafeTensors#saveFile(Map, Path, Map)}).
     *
     * @throws UncheckedIOException naming the file when it cannot be written
     * @deprecated a file is serialization's job, as {@code torch.save}: use
     *     {@code new Checkpoint().put("optimizer", optimizer).save(file)} ({@link org.ddp4j.serialization.Checkpoint}),
     *     or {@code SafeTensors.saveFile(state.tensors(), file, state.metadata())}
     */
    @Deprecated
    public void save(Path file) {
        SafeTensors.saveFile(tensors(), file, metadata());
    }

    /**
     * Reads a state that {@link #save} wrote; its tensors are new CPU tensors in the current
     * {@link org.ddp4j.tensor.Tensors#scope()}.
     *
     * @throws UncheckedIOException naming the file when it is missing or not a valid safetensors file
     * @throws IllegalArgumentException naming the file when it is a safetensors file but not an
     *     optimizer state (no {@code optimizer} or {@code param_groups} metadata, or a tensor
     *     name other than {@code state.<index>.<name>})
     * @deprecated use {@code Checkpoint.load(file).restore("optimizer", optimizer)}
     *     ({@link org.ddp4j.serialization.Checkpoint}), or
     *     {@code OptimizerStateDict.of(SafeTensors.loadFile(file), SafeTensors.loadMetadata(file), file.toString())}
     */
    @Deprecated
    public static OptimizerStateDict load(Path file) {
        return of(SafeTensors.loadFile(file), SafeTensors.loadMetadata(file), file.toString());
    }

    /**
     * The state held by {@link #tensors()} and {@link #metadata()} (e.g. read back from a file
     * holding more than this state).
     *
     * @param where names the source in messages, e.g. the file
     * @throws IllegalArgumentException naming {@code where} when the metadata lacks {@code optimizer}
     *     or {@code param_groups}, or a tensor name is not {@code state.<index>.<name>}
     */
    public static OptimizerStateDict of(Map<String, Tensor> tensors, Map<String, String> metadata, String where) {
        String optimizer = metadata.get(OPTIMIZER_KEY);
        String groups = metadata.get(PARAM_GROUPS_KEY);
        if (optimizer == null || groups == null) {
            throw new IllegalArgumentException(where + " is not an optimizer state: its metadata lacks '" + OPTIMIZER_KEY
                    + "' or '" + PARAM_GROUPS_KEY + "' (a model's state dict? load it with Module.loadStateDict)");
        }
        List<Map<String, Object>> paramGroups;
        try {
            paramGroups = JSON.readValue(groups, new TypeReference<List<Map<String, Object>>>() {});
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(where + ": metadata '" + PARAM_GROUPS_KEY + "' is not a JSON list of"
                    + " objects: " + e.getOriginalMessage(), e);
        }
        Map<Integer, Map<String, Tensor>> state = new TreeMap<>();
        tensors.forEach((name, t) -> {
            String[] parts = name.split("\\.", 3);
            int index;
            try {
                index = parts.length == 3 && parts[0].equals("state") ? Integer.parseInt(parts[1]) : -1;
            } catch (NumberFormatException e) {
                index = -1;
            }
            if (index < 0) {
                throw new IllegalArgumentException(where + ": tensor '" + name + "' is not named state.<index>.<name>,"
                        + " so this is not an optimizer state saved by ddp4j");
            }
            state.computeIfAbsent(index, i -> new LinkedHashMap<>()).put(parts[2], t);
        });
        return new OptimizerStateDict(optimizer, state, paramGroups);
    }
}
