package org.ddp4j.distributed;

import java.time.Duration;
import java.util.List;

/**
 * The old home of {@link org.ddp4j.multiprocessing.SpawnContext}, kept so that code importing
 * {@code org.ddp4j.distributed.SpawnContext} still compiles: the new class extends this one.
 *
 * @deprecated spawning lives in {@code org.ddp4j.multiprocessing}: import
 *     {@code org.ddp4j.multiprocessing.SpawnContext}
 */
@Deprecated
public abstract class SpawnContext implements AutoCloseable {
    /** Lines of a failed worker's stderr quoted in its exception. */
    public static final int STDERR_TAIL_LINES = 12;

    protected SpawnContext() {}

    /** The workers' process ids, by index. */
    public abstract List<Long> pids();

    /** How many workers were started. */
    public abstract int nprocs();

    /** Waits for every worker; see the new class. */
    public abstract void join();

    /** Waits at most {@code timeout}; see the new class. */
    public abstract boolean join(Duration timeout);

    @Override
    public abstract void close();
}
