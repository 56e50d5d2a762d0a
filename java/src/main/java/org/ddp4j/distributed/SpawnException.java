package org.ddp4j.distributed;

import java.util.List;

/**
 * The old home of {@link org.ddp4j.multiprocessing.SpawnException}, kept so that code catching
 * {@code org.ddp4j.distributed.SpawnException} still compiles and still catches it: the new class
 * extends this one.
 *
 * @deprecated spawning lives in {@code org.ddp4j.multiprocessing}: catch
 *     {@code org.ddp4j.multiprocessing.SpawnException}
 */
@Deprecated
public abstract class SpawnException extends DistributedException {
    protected SpawnException(String message) {
        super(message);
    }

    /** The failed worker's rank. */
    public abstract int rank();

    /** The failed worker's index in {@code [0, nprocs)}. */
    public abstract int index();

    /** Its exit code (128 + N for signal N). */
    public abstract int exitCode();

    /** The signal that killed it, e.g. {@code SIGKILL}, or null. */
    public abstract String signalName();

    /** The last lines it wrote to stderr. */
    public abstract List<String> stderrTail();
}
