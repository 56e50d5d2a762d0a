package org.ddp4j.utils;

import java.awt.Color;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.ddp4j.internal.AtomicFiles;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * A training curve as a PNG (the demos' {@code --plot FILE.png}): the loss against the training
 * step and, when given, the test accuracy on a second axis (0 to 1), drawn headless with XChart,
 * ticks formatted as plain numbers (1,000 steps, 0.25 loss), written atomically (a temporary file
 * in the same folder, then a rename) so a reader never sees half a PNG. Steps count over all epochs;
 * after a resume, continue from the steps already done so the x axis goes on where it stopped.
 * Needs {@code org.knowm.xchart:xchart} on the class path: an optional dependency of ddp4j, so an
 * app that plots adds it (the version in ddp4j's parent pom).
 *
 * <pre>{@code
 * TrainingPlot.checkPath(png);                          // before training: a bad path fails at once
 * var plot = new TrainingPlot("ConvNet, 2 ranks", "training loss (rank 0)");
 * plot.addLoss(step, loss);                             // at every logged step
 * plot.addAccuracy(step, accuracy);                     // after evaluating
 * plot.write(png);
 * }</pre>
 */
public final class TrainingPlot {
    /** Width of the PNG in pixels. */
    public static final int WIDTH = 900;
    /** Height of the PNG in pixels. */
    public static final int HEIGHT = 560;

    private final String title;
    private final String lossLabel;
    private final List<Double> lossSteps = new ArrayList<>();
    private final List<Double> losses = new ArrayList<>();
    private final List<Double> accuracySteps = new ArrayList<>();
    private final List<Double> accuracies = new ArrayList<>();

    /**
     * @param title the chart's title
     * @param lossLabel the loss curve's legend, e.g. "training loss (rank 0)"
     */
    public TrainingPlot(String title, String lossLabel) {
        this.title = title;
        this.lossLabel = lossLabel;
    }

    /**
     * Records a loss at training step {@code step} (1-based, counted over all epochs): one step's,
     * or the mean since the previous point.
     */
    public void addLoss(long step, double loss) {
        lossSteps.add((double) step);
        losses.add(loss);
    }

    /** Records a test accuracy in [0, 1] measured after {@code step} training steps. */
    public void addAccuracy(long step, double accuracy) {
        accuracySteps.add((double) step);
        accuracies.add(accuracy);
    }

    /**
     * Draws the PNG into {@code file}, replacing it atomically.
     *
     * @throws IllegalStateException if no loss was recorded (nothing to draw)
     * @throws UncheckedIOException naming the file when its folder is missing or the write fails
     */
    public void write(Path file) {
        if (losses.isEmpty()) {
            throw new IllegalStateException("--plot " + file + ": no loss was recorded, so there is no curve to draw");
        }
        System.setProperty("java.awt.headless", "true"); // no display needed
        String fullTitle = accuracies.isEmpty() ? title
                : title + String.format(Locale.ROOT, " (test accuracy %.2f %%)", 100 * accuracies.get(accuracies.size() - 1));
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(fullTitle)
                .xAxisTitle("training step").yAxisTitle("loss").build();
        chart.getStyler().setChartBackgroundColor(Color.WHITE).setLegendPosition(Styler.LegendPosition.InsideNE);
        // plain numbers on the axes: XChart's default pattern writes large step counts in scientific notation
        chart.getStyler().setXAxisDecimalPattern("#,##0").setYAxisDecimalPattern("0.00##");
        XYSeries loss = chart.addSeries(lossLabel, lossSteps, losses);
        loss.setMarker(lossSteps.size() > 200 ? SeriesMarkers.NONE : SeriesMarkers.CIRCLE);
        if (!accuracies.isEmpty()) {
            XYSeries accuracy = chart.addSeries("test accuracy (right axis)", accuracySteps, accuracies);
            accuracy.setYAxisGroup(1);
            accuracy.setMarker(SeriesMarkers.DIAMOND);
            chart.setYAxisGroupTitle(1, "test accuracy");
            chart.getStyler().setYAxisGroupPosition(1, Styler.YAxisPosition.Right);
            chart.getStyler().setYAxisMin(1, 0.0).setYAxisMax(1, 1.0); // one point would give a degenerate axis
        }
        byte[] png;
        try {
            png = BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new UncheckedIOException("--plot " + file + ": cannot encode the PNG: " + e.getMessage(), e);
        }
        AtomicFiles.write(file, channel -> {
            ByteBuffer buffer = ByteBuffer.wrap(png);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        });
    }

    /**
     * Checks a plot's path before training, so a bad one fails at once, not after hours.
     *
     * @param plot the file to write, or null (nothing to check)
     * @throws IllegalArgumentException if the name does not end in .png or its folder does not exist
     */
    public static void checkPath(Path plot) {
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
