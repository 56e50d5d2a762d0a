package org.ddp4j.multiprocessing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.ddp4j.internal.Setting;

/**
 * How ddp4j starts a worker JVM, shared by the launcher ({@code org.ddp4j.launch.WorkerCommand})
 * and {@link Spawn}: which java binary, how DDP4J_JAVA_OPTS is split into words, and
 * the worker defaults (collector, heap share, JIT) that those words do not already decide.
 */
public final class WorkerJvm {

    /**
     * Why this JVM cannot start workers, or empty when it can: workers get this JVM's class path
     * ({@code -cp}), so a launcher or spawn started on the module path would start workers that
     * find nothing.
     *
     * @param how the way to start it on the class path, for the message
     */
    public static Optional<String> classPathProblem(String how) {
        if (!WorkerJvm.class.getModule().isNamed()) {
            return Optional.empty();
        }
        return Optional.of("ddp4j starts its worker JVMs on this JVM's class path, and this JVM runs ddp4j on the"
                + " module path (module org.ddp4j; java.class.path='" + System.getProperty("java.class.path", "")
                + "'), so its workers would find no class: start it on the class path instead, " + how);
    }

    /** Environment variable whose words are passed to worker JVMs, e.g. {@code -Xmx4g}. */
    public static final String JAVA_OPTS_ENV = Setting.JAVA_OPTS.variable();

    /**
     * native-lib-loader deletes other JVMs' extraction folders older than this (5 minutes by
     * default), which would pull libddp4j_cuda.so away from a long-running sibling worker.
     */
    public static final String LEFTOVER_AGE_FLAG = "-Dorg.scijava.nativelib.leftoverMinAgeMs=86400000";

    /**
     * The garbage collector of worker JVMs unless DDP4J_JAVA_OPTS picks one. A worker's heap holds
     * little (tensors live in native memory), so the serial collector's short pauses cost less
     * than G1's extra GC threads and memory, which compete with the compute threads of every rank
     * on the node.
     */
    public static final String DEFAULT_GC_FLAG = "-XX:+UseSerialGC";

    /**
     * The JIT of worker JVMs unless DDP4J_JAVA_OPTS picks one: C1 only. A worker's hot work runs in
     * native kernels, so C2's faster Java buys little, while its compiler threads compete with
     * the ranks for the node's cores, and in lockstep training every rank waits for the slowest.
     * Measured on 2 cores, 2 ranks (benchmarks/RESULTS.md): linear demo 285 -> 70 µs per step over
     * 2000 epochs and 73 -> 29 µs in steady state; ConvNet images/s unchanged.
     */
    public static final String DEFAULT_JIT_FLAG = "-XX:TieredStopAtLevel=1";

    /**
     * The worker JVM flags that DDP4J_JAVA_OPTS does not already decide: {@link #DEFAULT_GC_FLAG}
     * unless a {@code -XX:+Use...GC} is given, and a heap cap of {@code -XX:MaxRAMPercentage=P}
     * with P = min(25, 50 / localWorkers) unless {@code -Xmx}, {@code -XX:MaxHeapSize} or a
     * {@code -XX:...RAMPercentage / MaxRAM} is given: the JVM's own default (a quarter of memory
     * each) would let the workers' heaps together claim more than the machine has, and the native
     * tensors need the rest.
     */
    public static List<String> memoryDefaults(List<String> userOptions, int localWorkers) {
        boolean gcChosen = userOptions.stream().anyMatch(o -> o.startsWith("-XX:+Use") && o.endsWith("GC"));
        boolean heapChosen = userOptions.stream().anyMatch(o -> o.startsWith("-Xmx") || o.startsWith("-XX:MaxHeapSize")
                || o.startsWith("-XX:MaxRAM") || o.startsWith("-XX:InitialRAMPercentage")
                || o.startsWith("-XX:MinRAMPercentage"));
        List<String> flags = new ArrayList<>();
        if (!gcChosen) {
            flags.add(DEFAULT_GC_FLAG);
        }
        if (!heapChosen) {
            double percent = Math.min(25.0, 50.0 / Math.max(1, localWorkers));
            flags.add(String.format(Locale.ROOT, "-XX:MaxRAMPercentage=%.1f", percent));
        }
        return flags;
    }

    /**
     * {@link #DEFAULT_JIT_FLAG} unless DDP4J_JAVA_OPTS decides the JIT itself
     * ({@code -XX:TieredStopAtLevel}, {@code -XX:[+-]TieredCompilation}, {@code -Xint},
     * {@code -Xcomp}); {@code -XX:TieredStopAtLevel=4} restores the JVM's default.
     */
    public static List<String> jitDefaults(List<String> userOptions) {
        boolean jitChosen = userOptions.stream().anyMatch(o -> o.startsWith("-XX:TieredStopAtLevel")
                || o.equals("-XX:+TieredCompilation") || o.equals("-XX:-TieredCompilation") || o.equals("-Xint")
                || o.equals("-Xcomp"));
        return jitChosen ? List.of() : List.of(DEFAULT_JIT_FLAG);
    }

    /** The java binary running this launcher (from ProcessHandle, else {@code java.home}). */
    public static String javaExecutable() {
        Optional<String> self = ProcessHandle.current().info().command();
        if (self.isPresent()) {
            Path p = Path.of(self.get());
            String file = p.getFileName() == null ? "" : p.getFileName().toString();
            if ((file.equals("java") || file.equals("java.exe")) && Files.isExecutable(p)) {
                return p.toString();
            }
        }
        Path home = Path.of(System.getProperty("java.home"), "bin", "java");
        return Files.isExecutable(home) ? home.toString() : "java";
    }

    /**
     * Splits JVM options at blanks, keeping single- or double-quoted parts together (the quotes are
     * removed) and honouring backslash escapes outside single quotes, as a shell would.
     */
    public static List<String> splitOptions(String text) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        char quote = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (quote != 0) {
                if (c == quote) {
                    quote = 0;
                } else if (c == '\\' && quote == '"' && i + 1 < text.length()) {
                    word.append(text.charAt(++i));
                } else {
                    word.append(c);
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
                inWord = true;
            } else if (c == '\\' && i + 1 < text.length()) {
                word.append(text.charAt(++i));
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

    /** {@link #memoryDefaults} then {@link #jitDefaults}: every default {@code userOptions} leaves open. */
    public static List<String> defaults(List<String> userOptions, int localWorkers) {
        List<String> flags = new ArrayList<>(memoryDefaults(userOptions, localWorkers));
        flags.addAll(jitDefaults(userOptions));
        return flags;
    }

    private WorkerJvm() {}
}
