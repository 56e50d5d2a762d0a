package org.ddp4j.distributed.algorithms.ddpcommhooks;

import java.util.Map;
import org.ddp4j.tensor.Tensor;

/**
 * A hook state that training checkpoints keep (PowerSGD's iteration count, error feedback, warm
 * start memory and random generator): PyTorch pickles {@code PowerSGDState} through its
 * {@code __getstate__}; here the state is a flat map of tensors, saved alongside the optimizer's.
 */
public interface CommHookState {
    /**
     * The state as named CPU tensors (scalars as one-element tensors), safe to save as safetensors;
     * the tensors are copies the caller owns.
     */
    Map<String, Tensor> stateDict();

    /**
     * Restores what {@link #stateDict()} returned (the tensors are copied).
     *
     * @throws IllegalArgumentException if an entry is missing or has the wrong shape or dtype,
     *     naming it
     */
    void loadStateDict(Map<String, Tensor> state);
}
