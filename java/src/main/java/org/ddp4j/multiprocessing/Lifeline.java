package org.ddp4j.multiprocessing;

import java.io.IOException;
import java.io.InputStream;

/**
 * A child JVM's tie to the process that started it: the child's stdin is a pipe its parent never
 * writes to, so when the parent dies, however it dies (kill -9 included), the kernel closes the
 * pipe and the child halts at end of file. Used by the launcher's workers and by spawned workers,
 * so that no worker outlives its parent.
 */
public final class Lifeline {
    private Lifeline() {}

    /**
     * Starts a daemon thread that reads {@code pipe} to its end, then prints
     * {@code "<who>: the <parent> is gone (its pipe closed); halting"} on stderr and halts the JVM
     * with {@code exitCode} (halt, not exit: a shutdown hook or a collective could block, and
     * nobody waits for this process any more).
     *
     * @param pipe the parent's pipe, usually this process's stdin
     * @param who this process in the message, e.g. {@code "ddp4j worker rank 1"}
     * @param parent the parent in the message, e.g. {@code "launcher"}
     * @param exitCode the exit status after the parent is gone
     * @return the started thread
     */
    public static Thread watch(InputStream pipe, String who, String parent, int exitCode) {
        Thread t = new Thread(() -> {
            byte[] sink = new byte[256];
            try {
                while (pipe.read(sink) >= 0) {
                    // the parent writes nothing; anything read is ignored
                }
            } catch (IOException e) {
                // a broken pipe means the same as end of file
            }
            System.err.println(who + ": the " + parent + " is gone (its pipe closed); halting");
            System.err.flush();
            Runtime.getRuntime().halt(exitCode);
        }, "ddp4j-lifeline");
        t.setDaemon(true);
        t.start();
        return t;
    }
}
