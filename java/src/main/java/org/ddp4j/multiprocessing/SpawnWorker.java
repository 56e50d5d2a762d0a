package org.ddp4j.multiprocessing;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import org.ddp4j.distributed.DumpSignal;
import org.ddp4j.distributed.ErrorFile;

/**
 * The main class of a worker JVM started by {@link Spawn} (internal: not meant to be run by hand).
 * Arguments: {@code className methodName index rank args...}; calls
 * {@code className.methodName(index, args)} and exits 0 when it returns, 1 when it throws.
 *
 * <p>The worker's stdin is a pipe from its parent that the parent never writes to: when the
 * parent dies, however it dies (kill -9 included), the kernel closes the pipe and the worker halts
 * at end of file, so no worker outlives its parent. The worker's code must not read stdin.
 */
public final class SpawnWorker {
    /** Exit code of a worker that halted because its parent is gone. */
    static final int PARENT_GONE_EXIT = 143;

    /** Precedes the exception in the last stderr line of a worker whose function threw; the parent quotes what follows. */
    static final String FAILED_MARK = ") failed: ";

    private SpawnWorker() {}

    public static void main(String[] argv) {
        if (argv.length < 4) {
            System.err.println("SpawnWorker is started by Spawn, not by hand"
                    + " (arguments: className methodName index rank args...)");
            System.exit(2);
        }
        DumpSignal.installIfSafe();
        int index = Integer.parseInt(argv[2]);
        int rank = Integer.parseInt(argv[3]);
        Lifeline.watch(System.in, "spawned worker rank " + rank, "parent process", PARENT_GONE_EXIT);
        String[] args = Arrays.copyOfRange(argv, 4, argv.length);
        int code = 0;
        try {
            Method m = new SpawnEntryPoint(argv[0], argv[1]).resolve();
            m.invoke(null, index, args);
        } catch (InvocationTargetException e) {
            code = report(e.getCause(), rank, index);
        } catch (Throwable e) {
            code = report(e, rank, index);
        }
        System.out.flush();
        System.err.flush();
        System.exit(code);
    }

    /** Prints the stack trace and, last (the parent quotes the last lines), one line naming the failure. */
    private static int report(Throwable e, int rank, int index) {
        ErrorFile.record(e);
        e.printStackTrace();
        System.err.println("spawned worker rank " + rank + " (index " + index + FAILED_MARK + e);
        return 1;
    }
}
