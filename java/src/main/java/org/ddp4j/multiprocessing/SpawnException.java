package org.ddp4j.multiprocessing;

import java.util.List;

/**
 * A worker started by {@link Spawn} failed: it exited with a non-zero code, was killed by a
 * signal, or threw (exit code 1). The other workers were stopped before this was thrown. Mirrors
 * {@code torch.multiprocessing}'s {@code ProcessExitedException} / {@code ProcessRaisedException}.
 * The message names the rank, the exit code or signal, and the last lines the worker wrote to
 * stderr.
 */
@SuppressWarnings("deprecation") // extends its old home, so that code catching the old type still catches it
public class SpawnException extends org.ddp4j.distributed.SpawnException {
    private final int rank;
    private final int index;
    private final int exitCode;
    private final String signalName;
    private final List<String> stderrTail;

    SpawnException(String message, int rank, int index, int exitCode, String signalName, List<String> stderrTail) {
        super(message);
        this.rank = rank;
        this.index = index;
        this.exitCode = exitCode;
        this.signalName = signalName;
        this.stderrTail = List.copyOf(stderrTail);
    }

    /** The failed worker's rank: its index plus {@link Spawn#rankOffset(int)}. */
    public int rank() {
        return rank;
    }

    /** The failed worker's index in {@code [0, nprocs)}, the first argument its function got. */
    public int index() {
        return index;
    }

    /** Its exit code; 128 + N when it was killed by signal N (the JDK's convention on Linux). */
    public int exitCode() {
        return exitCode;
    }

    /** The signal that killed it, e.g. {@code "SIGKILL"}, or null when it exited by itself. */
    public String signalName() {
        return signalName;
    }

    /** The last lines it wrote to stderr (at most {@link SpawnContext#STDERR_TAIL_LINES}). */
    public List<String> stderrTail() {
        return stderrTail;
    }
}
