package org.ddp4j.launch;

import java.io.PrintStream;
import java.util.ServiceLoader;
import java.util.ServiceConfigurationError;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * The launcher's own warnings and notices, printed straight to its stderr as {@code ddp4j-run: ...}
 * lines. They do not go through SLF4J because an application's class path may carry any binding
 * or none (ddp4j's binding is optional), and a launcher that failed or degraded must say so
 * whatever the logging set-up. SLF4J keeps only the launcher's debug log.
 */
final class Notices {

    /** SLF4J's switch for its own messages (SLF4J 2.0.10 and later). */
    static final String SLF4J_VERBOSITY = "slf4j.internal.verbosity";

    private Notices() {}

    /** Prints {@code ddp4j-run: warning: MESSAGE} on {@code err}. */
    static void warn(PrintStream err, String message) {
        err.println("ddp4j-run: warning: " + message);
        err.flush();
    }

    /** Prints {@code ddp4j-run: MESSAGE} on {@code err}: something the user should know, nothing wrong. */
    static void info(PrintStream err, String message) {
        err.println("ddp4j-run: " + message);
        err.flush();
    }

    /**
     * Without any SLF4J provider on the class path, SLF4J prints three "No SLF4J providers were
     * found" lines on the first log call. The launcher's messages do not depend on SLF4J, so in
     * the launcher's own JVM those lines say nothing useful: silence them unless the user set
     * {@value #SLF4J_VERBOSITY}. Must run before the first {@code LoggerFactory} call.
     */
    static void quietSlf4jWithoutProvider() {
        if (System.getProperty(SLF4J_VERBOSITY) != null || hasSlf4jProvider()) {
            return;
        }
        System.setProperty(SLF4J_VERBOSITY, "ERROR");
    }

    /** Whether an SLF4J 2 provider (a binding such as slf4j-simple or logback) is on the class path. */
    static boolean hasSlf4jProvider() {
        try {
            return ServiceLoader.load(SLF4JServiceProvider.class).stream().findAny().isPresent();
        } catch (ServiceConfigurationError e) {
            return false;
        }
    }
}
