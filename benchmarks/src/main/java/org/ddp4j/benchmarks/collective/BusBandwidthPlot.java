package org.ddp4j.benchmarks.collective;

import java.io.IOException;
import java.nio.file.Path;
import org.ddp4j.benchmarks.CurvesPlot;

/**
 * Draws busbw against message size, log-log, one curve per column, into a PNG (CurvesPlot).
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.ddp4j.benchmarks.collective.BusBandwidthPlot DATA.tsv OUT.png [TITLE]</pre>
 *
 * <p>DATA.tsv: a header line {@code bytes NAME1 NAME2 ...} then one line per size, whitespace
 * separated, busbw in GB/s; values that are not positive numbers are left out (a log axis cannot
 * show them). Needs fontconfig and a font (Debian {@code fontconfig}, {@code fonts-dejavu-core}).
 */
public final class BusBandwidthPlot {
    private BusBandwidthPlot() {}

    /**
     * Writes the plot.
     *
     * @throws IllegalArgumentException if the data has no header, no size or a malformed size
     * @throws IOException if DATA cannot be read or OUT cannot be written
     */
    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: BusBandwidthPlot DATA.tsv OUT.png [TITLE]");
            System.exit(2);
        }
        CurvesPlot.draw(Path.of(args[0]), args[1], args.length > 2 ? args[2] : "bus bandwidth against message size",
                "message size (bytes)", "busbw (GB/s, 10^9 B/s)", true);
    }
}
