package org.ddp4j.launch;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.ddp4j.debug.FlightRecorderDump;
import org.ddp4j.multiprocessing.WorkerJvm;
import org.ddp4j.internal.Setting;

/**
 * Turns the launcher's positional arguments into the command line of one worker.
 *
 * <p>If the first argument names a Java class that loads from the workers' class path (the
 * launcher's own, then {@code --classpath} / {@code DDP4J_CLASSPATH}), in a package or in the
 * default package, each worker is a new JVM:
 * {@code <this java> -cp <java.class.path>[:<extra>] <jvm flags> org.ddp4j.launch.WorkerMain MainClass args...},
 * where the JVM flags are a default that keeps native-lib-loader from deleting a sibling worker's
 * extracted libraries, {@code -XX:ErrorFile=<DDP4J_DEBUG_DIR>/hs_err_pid%p.log} (the working
 * directory when that is unset; see {@link FatalErrorLog}) unless {@code DDP4J_JAVA_OPTS} sets one,
 * the worker defaults of {@link WorkerJvm#defaults}, then the words of {@code DDP4J_JAVA_OPTS}; {@link WorkerMain} halts the worker when its launcher dies.
 * Otherwise, if it is an executable file or a command on PATH, the arguments are run as a command
 * through {@link #LIFELINE_SCRIPT}, which gives it the same guarantee. A name that is neither is
 * an {@link UnknownWorkerException}.
 */
final class WorkerCommand {

    /**
     * Environment variable with class path entries ({@code :}-separated, {@code dir/*} for every
     * jar in a folder, as {@code java -cp}) added after the launcher's own class path for the
     * workers and for finding the main class; the launcher's {@code --classpath} sets it.
     */
    static final String CLASSPATH_ENV = Setting.CLASSPATH.variable();

    /** The first positional argument is neither a loadable class nor an executable: a usage error. */
    static final class UnknownWorkerException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        UnknownWorkerException(String message) {
            super(message);
        }
    }




    private WorkerCommand() {}

    /** {@link #argv(List, Map, int)} for one worker on the node. */
    static List<String> argv(List<String> command, Map<String, String> env) {
        return argv(command, env, 1);
    }

    /**
     * Returns the command line of a worker: the JVM command line when {@code command.get(0)} is a
     * loadable class, otherwise the command run through {@link #LIFELINE_SCRIPT}.
     *
     * @param localWorkers workers this launcher starts on the node (they share its memory)
     * @throws UnknownWorkerException when {@code command.get(0)} is neither a class on the workers'
     *     class path nor an executable
     */
    static List<String> argv(List<String> command, Map<String, String> env, int localWorkers) {
        if (command.isEmpty()) {
            throw new IllegalArgumentException("no command");
        }
        String first = command.get(0);
        if (!isJavaClass(first, env)) {
            if (findExecutable(first, env) == null) {
                throw new UnknownWorkerException(unknownWorkerMessage(first, env));
            }
            return commandArgv(command, env);
        }
        List<String> argv = new ArrayList<>();
        argv.add(WorkerJvm.javaExecutable());
        argv.add("-cp");
        argv.add(workerClassPath(env));
        argv.add(WorkerJvm.LEFTOVER_AGE_FLAG);
        List<String> userOptions = WorkerJvm.splitOptions(env.getOrDefault(WorkerJvm.JAVA_OPTS_ENV, ""));
        if (FatalErrorLog.errorFile(userOptions) == null) {
            // A crashed worker's hs_err log lands in a known folder, where the launcher looks for it.
            argv.add(FatalErrorLog.option(FlightRecorderDump.directory(env)));
        }
        argv.addAll(WorkerJvm.defaults(userOptions, localWorkers));
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
     * Whether {@code name} has the shape of a binary class name: Java identifiers joined by dots
     * ({@code my.pkg.Main}, {@code Main}, {@code Outer$Inner}); no '/', no blanks.
     */
    static boolean looksLikeClassName(String name) {
        if (name.isEmpty()) {
            return false;
        }
        for (String part : name.split("\\.", -1)) {
            if (part.isEmpty() || !Character.isJavaIdentifierStart(part.charAt(0))
                    || !part.chars().skip(1).allMatch(Character::isJavaIdentifierPart)) {
                return false;
            }
        }
        return true;
    }

    /** {@link #isJavaClass(String, Map)} with the launcher's own class path only. */
    static boolean isJavaClass(String name) {
        return isJavaClass(name, Map.of());
    }

    /**
     * Whether {@code name} looks like a class name and that class loads from the workers' class
     * path: the launcher's own, then the entries of {@code DDP4J_CLASSPATH} in {@code env}.
     */
    static boolean isJavaClass(String name, Map<String, String> env) {
        if (!looksLikeClassName(name)) {
            return false;
        }
        ClassLoader parent = Thread.currentThread().getContextClassLoader();
        if (parent == null) {
            parent = ClassLoader.getSystemClassLoader();
        }
        List<Path> extra = expandClassPath(env.getOrDefault(CLASSPATH_ENV, ""));
        URL[] urls = new URL[extra.size()];
        for (int i = 0; i < urls.length; i++) {
            try {
                urls[i] = extra.get(i).toUri().toURL();
            } catch (MalformedURLException e) {
                throw new IllegalArgumentException(CLASSPATH_ENV + " entry " + extra.get(i) + " is not a valid path", e);
            }
        }
        try (URLClassLoader loader = new URLClassLoader(urls, parent)) {
            Class.forName(name, false, loader);
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The workers' {@code -cp}: this JVM's class path, then {@code DDP4J_CLASSPATH} when set. */
    static String workerClassPath(Map<String, String> env) {
        String own = System.getProperty("java.class.path", ".");
        String extra = env.getOrDefault(CLASSPATH_ENV, "").trim();
        return extra.isEmpty() ? own : own + File.pathSeparator + extra;
    }

    /**
     * The files of a class path as {@code java -cp} reads it: entries split at ':', an entry
     * {@code dir/*} (or {@code *}) standing for every {@code .jar} in that folder; empty entries
     * and missing files are dropped, as the JVM does.
     */
    static List<Path> expandClassPath(String classPath) {
        List<Path> files = new ArrayList<>();
        for (String entry : classPath.split(File.pathSeparator)) {
            if (entry.isBlank()) {
                continue;
            }
            if (entry.equals("*") || entry.endsWith(File.separator + "*")) {
                Path dir = Path.of(entry.substring(0, entry.length() - 1).isEmpty() ? "." : entry.substring(0, entry.length() - 1));
                if (!Files.isDirectory(dir)) {
                    continue;
                }
                try (DirectoryStream<Path> jars = Files.newDirectoryStream(dir)) {
                    for (Path jar : jars) {
                        String file = jar.getFileName().toString().toLowerCase(Locale.ROOT);
                        if (file.endsWith(".jar") && Files.isRegularFile(jar)) {
                            files.add(jar);
                        }
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot list the class path folder " + dir, e);
                }
            } else if (Files.exists(Path.of(entry))) {
                files.add(Path.of(entry));
            }
        }
        return files;
    }

    /** Why {@code name} cannot start a worker, naming both things it could have been and the fixes. */
    static String unknownWorkerMessage(String name, Map<String, String> env) {
        String extra = env.getOrDefault(CLASSPATH_ENV, "").trim();
        String where = extra.isEmpty()
                ? "the launcher's class path (java.class.path=" + System.getProperty("java.class.path", "") + ")"
                : "the workers' class path (the launcher's, then --classpath / " + CLASSPATH_ENV + "=" + extra + ")";
        String classHint = looksLikeClassName(name)
                ? "If it is your main class, put its jar on the class path: java -cp \"app.jar:libs/*\""
                        + " org.ddp4j.launch.Launcher ... " + name + ", or java -jar ddp4j-VERSION-launcher.jar"
                        + " --classpath app.jar ... " + name + " (check the spelling and the package too)."
                : "";
        String commandHint = name.contains("/")
                ? "As a command, " + name + " does not exist or is not executable (chmod +x?)."
                : "As a command, " + name + " is not on PATH; give its path (./" + name + ").";
        return "cannot start the workers: '" + name + "' is neither a class on " + where
                + " nor an executable file or command. " + (classHint.isEmpty() ? "" : classHint + " ") + commandHint;
    }


}
