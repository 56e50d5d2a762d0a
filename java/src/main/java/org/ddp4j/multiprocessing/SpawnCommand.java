package org.ddp4j.multiprocessing;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The command line of one spawned worker JVM: this JVM's java binary and class path, the JVM
 * options of this JVM that a worker needs to behave alike, worker defaults, the words of
 * {@code DDP4J_JAVA_OPTS}, then {@link SpawnWorker} with the entry point, index, rank and arguments.
 */
final class SpawnCommand {

    private SpawnCommand() {}

    /**
     * @param nprocs workers on this machine: without a heap option each gets
     *     min(25, 50 / nprocs) percent of memory, so their heaps together leave room for native tensors
     */
    static List<String> argv(SpawnEntryPoint entry, int index, int rank, int nprocs, List<String> args,
            Map<String, String> env) {
        List<String> argv = new ArrayList<>();
        argv.add(WorkerJvm.javaExecutable());
        argv.add("-cp");
        argv.add(System.getProperty("java.class.path", "."));
        argv.add(WorkerJvm.LEFTOVER_AGE_FLAG);
        argv.addAll(inheritedOptions(ManagementFactory.getRuntimeMXBean().getInputArguments()));
        List<String> user = WorkerJvm.splitOptions(env.getOrDefault(WorkerJvm.JAVA_OPTS_ENV, ""));
        argv.addAll(WorkerJvm.defaults(user, nprocs));
        argv.addAll(user);
        argv.add(SpawnWorker.class.getName());
        argv.add(entry.className());
        argv.add(entry.methodName());
        argv.add(Integer.toString(index));
        argv.add(Integer.toString(rank));
        argv.addAll(args);
        return argv;
    }

    /**
     * The options of this JVM a worker repeats: system properties ({@code -D}), assertions, and
     * module access flags. Heap sizes are not repeated (N workers share the machine), nor agents
     * (a debugger's or profiler's port would clash).
     */
    static List<String> inheritedOptions(List<String> parentOptions) {
        List<String> kept = new ArrayList<>();
        for (String o : parentOptions) {
            if ((o.startsWith("-D") && !o.startsWith("-Dorg.scijava.nativelib.leftoverMinAgeMs="))
                    || o.equals("-ea") || o.startsWith("-ea:") || o.equals("-enableassertions")
                    || o.startsWith("-enableassertions:") || o.equals("-esa")
                    || o.startsWith("--add-opens=") || o.startsWith("--add-exports=")
                    || o.startsWith("--enable-native-access=")) {
                kept.add(o);
            }
        }
        return kept;
    }



}
