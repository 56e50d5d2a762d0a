package org.ddp4j.examples;

import org.ddp4j.distributed.ErrorFile;
import org.ddp4j.internal.Setting;
import picocli.CommandLine;

/**
 * Runs a demo's picocli command. A failure prints one line, the exception's message (which names
 * the problem and the fix), instead of a stack trace; set DDP4J_DEBUG=1 to get the trace too. The
 * failure is also recorded in the worker's error file when a launcher asked for one (ErrorFile).
 */
final class DemoCommandLine {
    private DemoCommandLine() {}

    /** Parses args, runs the command and returns the exit code (1 when it threw). */
    static int execute(Object command, String[] args) {
        CommandLine cl = new CommandLine(command);
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            ErrorFile.record(e); // for a launcher: the failure with its facts, read instead of this line
            cmd.getErr().println(cmd.getCommandName() + ": error: " + e.getMessage());
            if (Setting.DEBUG.raw(System.getenv()) != null) {
                e.printStackTrace(cmd.getErr());
            }
            return 1;
        });
        return cl.execute(args);
    }
}
