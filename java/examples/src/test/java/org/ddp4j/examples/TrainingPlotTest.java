package org.ddp4j.examples;

import org.ddp4j.utils.TrainingPlot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The demos' --plot FILE.png: a PNG that reads back, written atomically, bad paths refused before training. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class TrainingPlotTest {
    @TempDir
    Path dir;

    /** Reads a PNG back and checks its size and that something other than the white background was drawn. */
    private static void assertPlot(Path png) throws Exception {
        BufferedImage image = ImageIO.read(png.toFile());
        assertTrue(image != null, png + " is not an image ImageIO can read");
        assertEquals(TrainingPlot.WIDTH, image.getWidth());
        assertEquals(TrainingPlot.HEIGHT, image.getHeight());
        long coloured = 0;
        for (int y = 0; y < image.getHeight(); y += 2) {
            for (int x = 0; x < image.getWidth(); x += 2) {
                int rgb = image.getRGB(x, y) & 0xffffff;
                int r = rgb >> 16;
                int g = (rgb >> 8) & 0xff;
                int b = rgb & 0xff;
                coloured += Math.max(r, Math.max(g, b)) - Math.min(r, Math.min(g, b)) > 60 ? 1 : 0;
            }
        }
        assertTrue(coloured > 50, "no coloured curve in " + png + " (" + coloured + " coloured pixels)");
    }

    @Test
    void writesAReadablePngAndNoTemporaryFile() throws Exception {
        TrainingPlot plot = new TrainingPlot("test curve", "loss");
        for (int step = 1; step <= 50; step++) {
            plot.addLoss(step, 2.3 / step);
        }
        plot.addAccuracy(50, 0.8);
        Path png = dir.resolve("curve.png");
        Files.writeString(png, "old content"); // replaced whole
        plot.write(png);
        assertPlot(png);
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(png), files.toList(), "a temporary file was left behind");
        }
    }

    @Test
    void refusesAnEmptyCurveAndBadPaths() {
        IllegalStateException empty = assertThrows(IllegalStateException.class,
                () -> new TrainingPlot("t", "loss").write(dir.resolve("x.png")));
        assertTrue(empty.getMessage().contains("no loss was recorded"), empty.getMessage());
        IllegalArgumentException folder = assertThrows(IllegalArgumentException.class,
                () -> TrainingPlot.checkPath(dir.resolve("missing/loss.png")));
        assertEquals("--plot " + dir.resolve("missing/loss.png") + ": the folder " + dir.resolve("missing")
                + " does not exist; create it first or pick another path", folder.getMessage());
        IllegalArgumentException suffix = assertThrows(IllegalArgumentException.class,
                () -> TrainingPlot.checkPath(dir.resolve("loss.jpg")));
        assertTrue(suffix.getMessage().endsWith("give a file name ending in .png"), suffix.getMessage());
    }

    @Test
    void linearDemoPlotsItsLossOnRankZero() throws Exception {
        Path png = dir.resolve("linear.png");
        List<String> out = DemoTest.launch("--nproc-per-node", "2", "--master-port", Integer.toString(LauncherProcess.freePort()),
                "org.ddp4j.examples.LinearDemo", "--epochs", "20", "--device", "cpu", "--plot", png.toString());
        assertTrue(out.contains("[rank0]: Plot written to " + png), String.join("\n", out));
        assertPlot(png);
    }

    @Test
    void convNetDemoPlotsLossAndTestAccuracy() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        Path png = dir.resolve("convnet.png");
        List<String> out = DemoTest.launch("--nproc-per-node", "1", "--master-port", Integer.toString(LauncherProcess.freePort()),
                "org.ddp4j.examples.ConvNetDemo", "--limit", "1000", "--batch-size", "5", "--test-limit", "100", "--device", "cpu",
                "--plot", png.toString());
        assertTrue(out.contains("[rank0]: Plot written to " + png), String.join("\n", out));
        assertPlot(png);
    }
}
