package org.ddp4j.launch;

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import org.ddp4j.distributed.DumpSignal;
import org.ddp4j.distributed.ErrorFile;
import org.ddp4j.multiprocessing.Lifeline;

/**
 * The bootstrap main of every Java worker the launcher starts:
 * {@code java ... org.ddp4j.launch.WorkerMain USER_MAIN_CLASS args...}. It ties the worker's life
 * to its launcher, then runs the user's {@code main}.
 *
 * <p>The launcher keeps the worker's stdin open and never writes to it. A daemon thread here blocks
 * reading it; end of file means the launcher is gone (killed with -9, crashed, or exited), and the
 * worker then halts at once with exit code {@value #ORPHAN_EXIT_CODE} and a line on stderr: no
 * orphan keeps training with nobody watching it. This works however the launcher dies, unlike
 * {@code PR_SET_PDEATHSIG}, which Java cannot set and which fires when the forking thread exits.
 *
 * <p>The user's program sees an empty stdin ({@link System#in} at end of file), as torchrun's
 * workers do: the launcher forwards no input.
 */
public final class WorkerMain {

    /** Exit code of a worker that halts because its launcher went away. */
    static final int ORPHAN_EXIT_CODE = 70;

    /**
     * System property naming the worker's parent in the lifeline's message (default "launcher");
     * org.ddp4j.spark sets "Spark task".
     */
    public static final String PARENT_PROPERTY = "ddp4j.worker.parent";

    private WorkerMain() {}

    /**
     * Starts the lifeline watcher, then calls {@code args[0]}'s {@code public static void main(String[])}
     * with the remaining arguments.
     *
     * @param args the user's main class, then its arguments
     * @throws Throwable whatever the user's main throws (the JVM then exits 1 with its stack trace, as usual)
     */
    public static void main(String[] args) throws Throwable {
        if (args.length == 0) {
            System.err.println("WorkerMain: missing the main class to run (the launcher passes it)");
            System.exit(2);
        }
        DumpSignal.installIfSafe();
        String rank = System.getenv("RANK");
        Lifeline.watch(new FileInputStream(FileDescriptor.in), "ddp4j worker" + (rank == null ? "" : " rank " + rank),
                System.getProperty(PARENT_PROPERTY, "launcher"), ORPHAN_EXIT_CODE);
        System.setIn(InputStream.nullInputStream());
        Method main;
        try {
            Class<?> cls = Class.forName(args[0], true, Thread.currentThread().getContextClassLoader());
            main = cls.getMethod("main", String[].class);
            if (!Modifier.isStatic(main.getModifiers())) {
                throw new NoSuchMethodException(args[0] + ".main is not static");
            }
            main.setAccessible(true); // as the java launcher, accept a main class that is not public
        } catch (ReflectiveOperationException | RuntimeException e) {
            System.err.println("WorkerMain: cannot run " + args[0] + ": it needs a public static void main(String[]) ("
                    + e + ")");
            System.exit(1);
            return;
        }
        try {
            main.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
        } catch (InvocationTargetException e) {
            ErrorFile.record(e.getCause()); // for the launcher: the failure with its facts
            throw e.getCause(); // the user's exception, as if main had been called directly
        }
    }
}
