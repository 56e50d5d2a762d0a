package org.ddp4j.nn;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.ddp4j.tensor.Tensor;

/**
 * Helpers for state dicts (name to tensor maps from {@link Module#stateDict()}), as PyTorch's
 * {@code torch.nn.modules.utils}.
 */
public final class StateDicts {
    /** The prefix DistributedDataParallel puts before the wrapped module's names. */
    public static final String DATA_PARALLEL_PREFIX = "module.";

    private StateDicts() {}

    /**
     * Strips {@code prefix} from every key of {@code stateDict} that starts with it, in place,
     * keeping the order; other keys are left as they are. Mirrors
     * {@code torch.nn.modules.utils.consume_prefix_in_state_dict_if_present}: e.g. with
     * {@code "module."}, a DistributedDataParallel model's {@code module.fc.bias} becomes
     * {@code fc.bias}, as {@code model.module.state_dict()} names it.
     *
     * @param stateDict a mutable map (e.g. a LinkedHashMap, or what SafeTensors.loadFile returns)
     * @throws IllegalArgumentException if stripping would give two entries the same name
     * @throws UnsupportedOperationException if stateDict is unmodifiable
     */
    public static void consumePrefixInStateDictIfPresent(Map<String, Tensor> stateDict, String prefix) {
        Map<String, Tensor> renamed = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : stateDict.entrySet()) {
            String name = e.getKey().startsWith(prefix) ? e.getKey().substring(prefix.length()) : e.getKey();
            if (renamed.put(name, e.getValue()) != null) {
                throw new IllegalArgumentException("consumePrefixInStateDictIfPresent: removing '" + prefix + "' from the"
                        + " keys gives '" + name + "' twice: the state dict holds both '" + name + "' and '" + prefix + name + "'");
            }
        }
        stateDict.clear();
        stateDict.putAll(renamed);
    }

    /**
     * {@code state} with DistributedDataParallel's {@code module.} prefix added or removed so that
     * its keys can match {@code expected}: removed when every key of state has it and no expected
     * key does, added when every expected key has it and no key of state does; otherwise state
     * itself. A copy; state is not changed.
     */
    static Map<String, Tensor> matchDataParallelPrefix(Map<String, Tensor> state, Set<String> expected) {
        if (allPrefixed(state.keySet()) && noneStartsWithPrefix(expected)) {
            Map<String, Tensor> out = new LinkedHashMap<>(state);
            consumePrefixInStateDictIfPresent(out, DATA_PARALLEL_PREFIX);
            return out;
        }
        if (allPrefixed(expected) && noneStartsWithPrefix(state.keySet())) {
            Map<String, Tensor> out = new LinkedHashMap<>();
            state.forEach((name, t) -> out.put(DATA_PARALLEL_PREFIX + name, t));
            return out;
        }
        return state;
    }

    private static boolean allPrefixed(Set<String> keys) {
        return !keys.isEmpty() && keys.stream().allMatch(k -> k.startsWith(DATA_PARALLEL_PREFIX));
    }

    private static boolean noneStartsWithPrefix(Set<String> keys) {
        return keys.stream().noneMatch(k -> k.startsWith(DATA_PARALLEL_PREFIX));
    }
}
