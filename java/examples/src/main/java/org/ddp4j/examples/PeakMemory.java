package org.ddp4j.examples;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** This process's peak resident memory, as the benchmarks compare it with PyTorch's (ru_maxrss). */
final class PeakMemory {
    private PeakMemory() {}

    /** VmHWM of /proc/self/status in MiB; NaN where there is no such file (not Linux). */
    static double residentMiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0; // the line reads "VmHWM: N kB"
                }
            }
        } catch (IOException | NumberFormatException e) {
            // fall through: a summary without the figure beats a failed run
        }
        return Double.NaN;
    }
}
