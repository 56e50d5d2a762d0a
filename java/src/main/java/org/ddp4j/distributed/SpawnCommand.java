package org.ddp4j.distributed;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The command line of one spawned worker JVM: this JVM's java binary and class path, the JVM
 * options of this JVM that a worker needs to behave alike, worker defaults, the words of
 * {@code DDP4J_JAVA_OPTS}, then {@link SpawnWorker} with the entry point, index, rank and arguments.
 */
final class SpawnCommand {
    /** Environment variable whose words are added to every worker JVM's options, e.g. {@code -Xmx4g}. */
    static final String JAVA_OPTS_ENV = "DDP4J_JAVA_OPTS";

    /** native-lib-loader would otherwise delete a long-running sibling's extracted libraries after 5 minutes. */
    static final String LEFTOVER_AGE_FLAG = "-Dorg.scijava.nativelib.leftoverMinAgeMs=86400000";

    private SpawnCommand() {}

    /**
     * @param nprocs workers on this machine: without a heap option each gets
     *     min(25, 50 / nprocs) percent of memory, so their heaps together leave room for native tensors
     */
    static List<String> argv(SpawnEntryPoint entry, int index, int rank, int nprocs, List<String> args,
            Map<String, String> env) {
        List<String> argv = new ArrayList<>();
        argv.add(javaExecutable());
        argv.add("-cp");
        argv.add(System.getProperty("java.class.path", "."));
        argv.add(LEFTOVER_AGE_FLAG);
        argv.addAll(inheritedOptions(ManagementFactory.getRuntimeMXBean().getInputArguments()));
        List<String> user = splitWords(env.getOrDefault(JAVA_OPTS_ENV, ""));
        argv.addAll(defaults(user, nprocs));
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

    /**
     * What the launcher's workers get unless DDP4J_JAVA_OPTS decides it: the serial collector
     * (tensors live in native memory, so the heap is small and G1's threads would compete with the
     * ranks' compute), a heap share of memory, and the C1 JIT only (hot work runs in native kernels;
     * C2's compiler threads would take cores from ranks that train in lock step).
     */
    static List<String> defaults(List<String> user, int nprocs) {
        List<String> flags = new ArrayList<>();
        if (user.stream().noneMatch(o -> o.startsWith("-XX:+Use") && o.endsWith("GC"))) {
            flags.add("-XX:+UseSerialGC");
        }
        if (user.stream().noneMatch(o -> o.startsWith("-Xmx") || o.startsWith("-XX:MaxHeapSize") || o.contains("RAMPercentage")
                || o.startsWith("-XX:MaxRAM"))) {
            flags.add(String.format(Locale.ROOT, "-XX:MaxRAMPercentage=%.1f", Math.min(25.0, 50.0 / Math.max(1, nprocs))));
        }
        if (user.stream().noneMatch(o -> o.startsWith("-XX:TieredStopAtLevel") || o.endsWith("TieredCompilation")
                || o.equals("-Xint") || o.equals("-Xcomp"))) {
            flags.add("-XX:TieredStopAtLevel=1");
        }
        return flags;
    }

    /** Splits at blanks; single or double quotes keep blanks inside a word (and are removed). */
    static List<String> splitWords(String text) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        char quote = 0;
        for (char c : text.toCharArray()) {
            if (quote != 0) {
                if (c == quote) {
                    quote = 0;
                } else {
                    word.append(c);
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
                inWord = true;
            } else if (Character.isWhitespace(c)) {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        return words;
    }

    /** The java binary running this JVM (else {@code java.home}/bin/java). */
    static String javaExecutable() {
        Optional<String> self = ProcessHandle.current().info().command();
        if (self.isPresent() && Path.of(self.get()).getFileName().toString().equals("java") && Files.isExecutable(Path.of(self.get()))) {
            return self.get();
        }
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }
}
