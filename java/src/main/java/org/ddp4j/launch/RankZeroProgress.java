package org.ddp4j.launch;

import java.io.Console;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.util.Locale;
import java.util.Map;
import org.ddp4j.internal.Setting;

/**
 * Whether rank 0 draws a progress bar: the launcher knows whether its own stdout is a terminal
 * (its workers write into pipes and cannot tell), and passes the answer to each worker as
 * {@code DDP4J_PROGRESS}{@code =1} (rank 0 draws) or {@code =0} (plain log lines). The user's own
 * {@code DDP4J_PROGRESS} in the launcher's environment chooses: {@code auto} (the default: a bar when
 * the launcher's stdout is a terminal), {@code 1} (always, e.g. under a terminal multiplexer that
 * the check misses) or {@code 0} (never).
 */
final class RankZeroProgress {
    /** The variable the launcher reads (auto, 1, 0) and sets in each worker's environment (1 or 0). */
    static final String ENV = Setting.PROGRESS.variable();

    private RankZeroProgress() {
    }

    /**
     * Whether the workers' rank 0 should draw a progress bar.
     *
     * @param launcherEnv the launcher's environment, where {@code DDP4J_PROGRESS} may be set
     * @param outIsTerminal whether the launcher's stdout (where the workers' stdout goes) is a terminal
     * @return true to tell rank 0 to draw a bar
     * @throws IllegalArgumentException if {@code DDP4J_PROGRESS} is set to something other than auto, 1 or 0
     */
    static boolean wanted(Map<String, String> launcherEnv, boolean outIsTerminal) {
        String value = launcherEnv.getOrDefault(ENV, "").trim().toLowerCase(Locale.ROOT);
        switch (value) {
            case "", "auto":
                return outIsTerminal;
            case "1", "on", "true", "yes":
                return true;
            case "0", "off", "false", "no":
                return false;
            default:
                throw new IllegalArgumentException(ENV + " is '" + launcherEnv.get(ENV) + "': set it to 1 (a progress bar on"
                        + " rank 0 always), 0 (plain log lines) or auto (a bar when the launcher's output is a terminal;"
                        + " the default), or unset it");
        }
    }

    /**
     * The value of {@code DDP4J_PROGRESS} for one worker: {@code "1"} for global rank 0 when {@code wanted},
     * else {@code "0"} (the other ranks' output would fight over one terminal line).
     */
    static String forRank(int rank, boolean wanted) {
        return wanted && rank == 0 ? "1" : "0";
    }

    /**
     * Whether {@code out} is this process's stdout and that is a terminal: {@link System#console()}
     * is non-null when stdin and stdout both are (JDK 17); from JDK 22 on, the console exists
     * without a terminal as well, and its {@code isTerminal()} tells.
     */
    static boolean isTerminal(PrintStream out) {
        Console console = System.console();
        if (out != System.out || console == null) {
            return false;
        }
        try {
            Method isTerminal = Console.class.getMethod("isTerminal"); // JDK 22+
            return (Boolean) isTerminal.invoke(console);
        } catch (NoSuchMethodException e) {
            return true; // JDK 17-21: a console exists only on a terminal
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }
}
