package org.ddp4j.examples;

import java.awt.Color;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.ddp4j.serialization.AtomicFiles;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The demos' {@code --plot FILE.png}: the training loss against the step and, when given, the test
 * accuracy on a second axis, drawn headless with XChart and written atomically (a temporary file
 * in the same folder, then a rename), so a reader never sees half a PNG.
 */
final class TrainingPlot {
    /** Pixel size of the PNG. */
    static final int WIDTH = 900;
    static final int HEIGHT = 560;

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
    TrainingPlot(String title, String lossLabel) {
        this.title = title;
        this.lossLabel = lossLabel;
    }

    /**
     * Records a loss at training step {@code step} (1-based, counted over all epochs): one step's,
     * or the mean since the previous point.
     */
    void addLoss(long step, double loss) {
        lossSteps.add((double) step);
        losses.add(loss);
    }

    /** Records a test accuracy in [0, 1] measured after {@code step} training steps. */
    void addAccuracy(long step, double accuracy) {
        accuracySteps.add((double) step);
        accuracies.add(accuracy);
    }

    /**
     * Draws the PNG into {@code file}, replacing it atomically.
     *
     * @throws IllegalStateException if no loss was recorded (nothing to draw)
     * @throws UncheckedIOException naming the file when its folder is missing or the write fails
     */
    void write(Path file) {
        if (losses.isEmpty()) {
            throw new IllegalStateException("--plot " + file + ": no loss was recorded, so there is no curve to draw");
        }
        System.setProperty("java.awt.headless", "true"); // no display needed
        String fullTitle = accuracies.isEmpty() ? title
                : title + String.format(Locale.ROOT, " (test accuracy %.2f %%)", 100 * accuracies.get(accuracies.size() - 1));
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(fullTitle)
                .xAxisTitle("training step").yAxisTitle("loss").build();
        chart.getStyler().setChartBackgroundColor(Color.WHITE).setLegendPosition(Styler.LegendPosition.InsideNE);
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
}
