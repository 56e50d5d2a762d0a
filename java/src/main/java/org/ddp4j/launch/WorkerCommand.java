package org.ddp4j.launch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Turns the launcher's positional arguments into the command line of one worker.
 *
 * <p>If the first argument is a Java class name (it contains a '.' but no '/', and the class loads
 * from the launcher's own class path), each worker is a new JVM:
 * {@code <this java> -cp <java.class.path> <jvm flags> MainClass args...}, where the JVM flags are a
 * default that keeps native-lib-loader from deleting a sibling worker's extracted libraries, then
 * the words of {@code DDP4J_JAVA_OPTS}. Otherwise the arguments are run as a command as they are.
 */
final class WorkerCommand {

    /** Environment variable whose words are passed to worker JVMs, e.g. {@code -Xmx4g}. */
    static final String JAVA_OPTS_ENV = "DDP4J_JAVA_OPTS";

    /**
     * native-lib-loader deletes other JVMs' extraction folders older than this (5 minutes by
     * default), which would pull libddp4j_cuda.so away from a long-running sibling worker.
     */
    static final String LEFTOVER_AGE_FLAG = "-Dorg.scijava.nativelib.leftoverMinAgeMs=86400000";

    private WorkerCommand() {}

    /**
     * Returns the command line of a worker: the JVM command line when {@code command.get(0)} is a
     * loadable class, otherwise {@code command} unchanged.
     */
    static List<String> argv(List<String> command, Map<String, String> env) {
        if (command.isEmpty()) {
            throw new IllegalArgumentException("no command");
        }
        String first = command.get(0);
        if (!isJavaClass(first)) {
            return List.copyOf(command);
        }
        List<String> argv = new ArrayList<>();
        argv.add(javaExecutable());
        argv.add("-cp");
        argv.add(System.getProperty("java.class.path", "."));
        argv.add(LEFTOVER_AGE_FLAG);
        argv.addAll(splitOptions(env.getOrDefault(JAVA_OPTS_ENV, "")));
        argv.addAll(command);
        return List.copyOf(argv);
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
