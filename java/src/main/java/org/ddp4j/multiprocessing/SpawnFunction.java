package org.ddp4j.multiprocessing;

import java.io.Serializable;

/**
 * What {@link Spawn} runs in each worker JVM: {@code call(index, args)} with the worker's index
 * in {@code [0, nprocs)} and the arguments given to spawn, as {@code torch.multiprocessing.spawn}
 * calls {@code fn(i, *args)}.
 *
 * <p>A lambda cannot cross into another JVM, so only what a new JVM can find by name is accepted:
 * a method reference to a static method {@code static void name(int index, String[] args)}
 * ({@code MyTrainer::train}), or a lambda that captures nothing. Bound method references
 * ({@code trainer::train}) and lambdas that use local variables or {@code this} are refused when
 * spawning, with a message that says why; pass such values as string arguments instead.
 */
@FunctionalInterface
public interface SpawnFunction extends Serializable {
    /**
     * Runs in worker {@code index}; returning ends the worker with exit code 0, throwing ends it
     * with exit code 1 (the parent's {@link SpawnException} shows the exception's last lines).
     */
    void call(int index, String[] args) throws Exception;
}
