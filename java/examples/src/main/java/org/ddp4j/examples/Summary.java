package org.ddp4j.examples;

import java.util.Locale;

/**
 * The machine-readable last line each demo prints per rank:
 * {@code summary rank=R world=W steps=S seconds=T images_per_s=X loss=L [us_per_step=U]}.
 */
record Summary(int rank, int world, long steps, double seconds, long imagesPerStep, double loss) {
    /** The line without extras. */
    String line() {
        return String.format(Locale.ROOT, "summary rank=%d world=%d steps=%d seconds=%.3f images_per_s=%.1f loss=%.6f",
                rank, world, steps, seconds, imagesPerSecond(), loss);
    }

    /** The line with µs per training step appended (the linear demo). */
    String lineWithStepTime() {
        return line() + String.format(Locale.ROOT, " us_per_step=%.1f", steps == 0 ? 0 : seconds * 1e6 / steps);
    }

    double imagesPerSecond() {
        return seconds > 0 ? steps * imagesPerStep / seconds : 0;
    }
}
