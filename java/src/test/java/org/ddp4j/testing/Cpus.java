package org.ddp4j.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The CPUs this JVM may run on, as sched_getaffinity counts them (child processes inherit the mask). */
public final class Cpus {
    private Cpus() {}

    /** The CPUs of {@code Cpus_allowed_list} in /proc/self/status (e.g. {@code 0-3,8} is 5). */
    public static int allowed() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("Cpus_allowed_list:")) {
                int n = 0;
                for (String part : line.substring(line.indexOf(':') + 1).strip().split(",")) {
                    String[] ends = part.strip().split("-");
                    n += ends.length == 1 ? 1 : Integer.parseInt(ends[1]) - Integer.parseInt(ends[0]) + 1;
                }
                return n;
            }
        }
        throw new IOException("no Cpus_allowed_list in /proc/self/status");
    }
}
