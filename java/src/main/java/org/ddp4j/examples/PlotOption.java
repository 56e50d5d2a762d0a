package org.ddp4j.examples;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/** Checks a demo's {@code --plot FILE.png} before training, so a bad path fails at once, not after hours. */
final class PlotOption {
    private PlotOption() {}

    /**
     * @param plot the --plot value, or null when not given
     * @throws IllegalArgumentException if the file's folder does not exist or the name does not end in .png
     */
    static void checkFolder(Path plot) {
        if (plot == null) {
            return;
        }
        if (!plot.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".png")) {
            throw new IllegalArgumentException("--plot " + plot + ": the plot is a PNG; give a file name ending in .png");
        }
        Path folder = plot.toAbsolutePath().getParent();
        if (folder == null || !Files.isDirectory(folder)) {
            throw new IllegalArgumentException("--plot " + plot + ": the folder " + folder + " does not exist; create it"
                    + " first or pick another path");
        }
    }
}
