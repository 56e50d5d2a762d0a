package org.ddp4j.launch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Turns the launcher's positional arguments into the command line of one worker.
 *
 * <p>If the first argument is a Java class name (it contains a '.' but no '/', and the class loads
 * from the launcher's own class path), each worker is a new JVM:
 * {@code <this java> -cp <java.class.path> <jvm flags> org.ddp4j.launch.WorkerMain MainClass args...},
 * where the JVM flags are a default that keeps native-lib-loader from deleting a sibling worker's
 * extracted libraries, the worker defaults of {@link #memoryDefaults} and {@link #jitDefaults}, then
 * the words of {@code DDP4J_JAVA_OPTS}; {@link WorkerMain} halts the worker when its launcher dies.
 * Otherwise the arguments are run as a command through {@link #LIFELINE_SCRIPT}, which gives it the
 * same guarantee.
 */
final class WorkerCommand {

    /** Environment variable whose words are passed to worker JVMs, e.g. {@code -Xmx4g}. */
    static final String JAVA_OPTS_ENV = "DDP4J_JAVA_OPTS";

    /**
     * native-lib-loader deletes other JVMs' extraction folders older than this (5 minutes by
     * default), which would pull libddp4j_cuda.so away from a long-running sibling worker.
     */
    static final String LEFTOVER_AGE_FLAG = "-Dorg.scijava.nativelib.leftoverMinAgeMs=86400000";

    /**
     * The garbage collector of worker JVMs unless DDP4J_JAVA_OPTS picks one. A worker's heap holds
     * little (tensors live in native memory), so the serial collector's short pauses cost less
     * than G1's extra GC threads and memory, which compete with the compute threads of every rank
     * on the node.
     */
    static final String DEFAULT_GC_FLAG = "-XX:+UseSerialGC";

    /**
     * The JIT of worker JVMs unless DDP4J_JAVA_OPTS picks one: C1 only. A worker's hot work runs in
     * native kernels, so C2's faster Java buys little, while its compiler threads compete with
     * the ranks for the node's cores, and in lockstep training every rank waits for the slowest.
     * Measured on 2 cores, 2 ranks (benchmarks/RESULTS.md): linear demo 285 -> 70 µs per step over
     * 2000 epochs and 73 -> 29 µs in steady state; ConvNet images/s unchanged.
     */
    static final String DEFAULT_JIT_FLAG = "-XX:TieredStopAtLevel=1";

    private WorkerCommand() {}

    /** {@link #argv(List, Map, int)} for one worker on the node. */
    static List<String> argv(List<String> command, Map<String, String> env) {
        return argv(command, env, 1);
    }

    /**
     * Returns the command line of a worker: the JVM command line when {@code command.get(0)} is a
     * loadable class, otherwise {@code command} unchanged.
     *
     * @param localWorkers workers this launcher starts on the node (they share its memory)
     */
    static List<String> argv(List<String> command, Map<String, String> env, int localWorkers) {
        if (command.isEmpty()) {
            throw new IllegalArgumentException("no command");
        }
        String first = command.get(0);
        if (!isJavaClass(first)) {
            return commandArgv(command, env);
        }
        List<String> argv = new ArrayList<>();
        argv.add(javaExecutable());
        argv.add("-cp");
        argv.add(System.getProperty("java.class.path", "."));
        argv.add(LEFTOVER_AGE_FLAG);
        List<String> userOptions = splitOptions(env.getOrDefault(JAVA_OPTS_ENV, ""));
        argv.addAll(memoryDefaults(userOptions, localWorkers));
        argv.addAll(jitDefaults(userOptions));
        argv.addAll(userOptions);
        argv.add(WorkerMain.class.getName());
        argv.addAll(command);
        return List.copyOf(argv);
    }

    /**
     * The bash script that runs a command worker and kills it when its launcher dies: it starts a
     * watcher in the background that reads the launcher's silent stdin pipe (kept as fd 3) and, at
     * end of file, kills the command's process group (the command runs in a session of its own,
     * through {@code setsid}, so its children go too), then replaces itself with the command, which
     * keeps the shell's pid (the launcher's worker pid) and gets an empty stdin. The watcher also
     * ends, silently, once the command is gone. It prints nothing: its stderr is a pipe to the dead
     * launcher, and writing there would kill it with SIGPIPE before it kills the command.
     */
    static final String LIFELINE_SCRIPT = String.join("\n",
            "exec 3<&0",
            "( while :; do",
            "    IFS= read -r -t 1 line <&3; rc=$?",
            "    if [ $rc -eq 0 ]; then continue; fi",
            "    kill -0 $$ 2>/dev/null || exit 0",
            "    if [ $rc -le 128 ]; then",
            "      kill -KILL -- -$$ 2>/dev/null || kill -KILL $$ 2>/dev/null",
            "      exit 0",
            "    fi",
            "  done ) >/dev/null &",
            "exec \"$@\" </dev/null 3<&-");

    /** The shell that runs {@link #LIFELINE_SCRIPT}. */
    static final String BASH = "/bin/bash";

    /** Puts the command worker in a session (and process group) of its own; optional. */
    static final String SETSID = "/usr/bin/setsid";

    /**
     * The command line of a worker that is not a Java class: {@code [setsid] bash -c LIFELINE_SCRIPT
     * ddp4j-worker COMMAND...}. A command that cannot be found is returned as it is, so starting it
     * fails with the launcher's "cannot start worker" message; without bash, too (no lifeline then).
     */
    static List<String> commandArgv(List<String> command, Map<String, String> env) {
        if (!Files.isExecutable(Path.of(BASH)) || findExecutable(command.get(0), env) == null) {
            return List.copyOf(command);
        }
        List<String> argv = new ArrayList<>();
        if (Files.isExecutable(Path.of(SETSID))) {
            argv.add(SETSID);
        }
        argv.add(BASH);
        argv.add("-c");
        argv.add(LIFELINE_SCRIPT);
        argv.add("ddp4j-worker");
        argv.addAll(command);
        return List.copyOf(argv);
    }

    /** {@code name} as the worker would run it: a path if it has a '/', else looked up on the worker's PATH. */
    static Path findExecutable(String name, Map<String, String> env) {
        if (name.isEmpty()) {
            return null;
        }
        if (name.contains("/")) {
            Path p = Path.of(name);
            return Files.isExecutable(p) && !Files.isDirectory(p) ? p : null;
        }
        String path = env.getOrDefault("PATH", System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
        for (String dir : path.split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, name);
            if (Files.isExecutable(p) && !Files.isDirectory(p)) {
                return p;
            }
        }
        return null;
    }

    /**
     * The worker JVM flags that DDP4J_JAVA_OPTS does not already decide: {@link #DEFAULT_GC_FLAG}
     * unless a {@code -XX:+Use...GC} is given, and a heap cap of {@code -XX:MaxRAMPercentage=P}
     * with P = min(25, 50 / localWorkers) unless {@code -Xmx}, {@code -XX:MaxHeapSize} or a
     * {@code -XX:...RAMPercentage / MaxRAM} is given: the JVM's own default (a quarter of memory
     * each) would let the workers' heaps together claim more than the machine has, and the native
     * tensors need the rest.
     */
    static List<String> memoryDefaults(List<String> userOptions, int localWorkers) {
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
    static List<String> jitDefaults(List<String> userOptions) {
        boolean jitChosen = userOptions.stream().anyMatch(o -> o.startsWith("-XX:TieredStopAtLevel")
                || o.equals("-XX:+TieredCompilation") || o.equals("-XX:-TieredCompilation") || o.equals("-Xint")
                || o.equals("-Xcomp"));
        return jitChosen ? List.of() : List.of(DEFAULT_JIT_FLAG);
    }

    /** Whether {@code name} has the shape of a class name: a '.' inside, no '/', no blanks. */
    static boolean looksLikeClassName(String name) {
        return name.contains(".")
                && !name.contains("/")
                && !name.startsWith(".")
                && !name.endsWith(".")
                && name.chars().noneMatch(Character::isWhitespace);
    }

    /** Whether {@code name} looks like a class name and that class is on the launcher's class path. */
    static boolean isJavaClass(String name) {
        if (!looksLikeClassName(name)) {
            return false;
        }
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        if (loader == null) {
            loader = ClassLoader.getSystemClassLoader();
        }
        try {
            Class.forName(name, false, loader);
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** The java binary running this launcher (from ProcessHandle, else {@code java.home}). */
    static String javaExecutable() {
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
    static List<String> splitOptions(String text) {
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
}
