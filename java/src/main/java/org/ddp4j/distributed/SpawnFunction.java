package org.ddp4j.distributed;

/**
 * The old home of {@link org.ddp4j.multiprocessing.SpawnFunction}, kept so that code importing
 * {@code org.ddp4j.distributed.SpawnFunction} still compiles: a function of this type is one of
 * the new type.
 *
 * @deprecated spawning lives in {@code org.ddp4j.multiprocessing}, as PyTorch's
 *     {@code torch.multiprocessing}: import {@code org.ddp4j.multiprocessing.SpawnFunction}
 */
@Deprecated
@FunctionalInterface
public interface SpawnFunction extends org.ddp4j.multiprocessing.SpawnFunction {}
