package org.ddp4j.distributed;

/**
 * The old home of {@link org.ddp4j.nn.parallel.Join}, kept so that code declaring
 * {@code org.ddp4j.distributed.Join join = ddp.join()} still compiles: the new class extends this one.
 *
 * @deprecated the join context lives with DDP in {@code org.ddp4j.nn.parallel}: import
 *     {@code org.ddp4j.nn.parallel.Join} (or write {@code var join = ddp.join()})
 */
@Deprecated
public abstract class Join implements AutoCloseable {
    protected Join() {}

    /** Shadows the other ranks' collectives until every rank has joined; see the new class. */
    @Override
    public abstract void close();
}
