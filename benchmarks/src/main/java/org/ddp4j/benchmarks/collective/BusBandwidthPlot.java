package org.ddp4j.benchmarks.collective;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.XYStyler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Draws busbw against message size, log-log, one curve per column, into a PNG (XChart, headless).
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
        System.setProperty("java.awt.headless", "true");
        List<String> lines = Files.readAllLines(Path.of(args[0])).stream().filter(l -> !l.isBlank()).toList();
        if (lines.size() < 2) {
            throw new IllegalArgumentException(args[0] + ": needs a header line and at least one size");
        }
        String[] names = lines.get(0).trim().split("\\s+");
        XYChart chart = new XYChartBuilder().width(900).height(560)
                .title(args.length > 2 ? args[2] : "bus bandwidth against message size")
                .xAxisTitle("message size (bytes)").yAxisTitle("busbw (GB/s, 10^9 B/s)").build();
        XYStyler style = chart.getStyler();
        style.setXAxisLogarithmic(true).setYAxisLogarithmic(true);
        // Log axes draw a line per minor tick: keep them faint so the curves stand out.
        style.setPlotGridLinesColor(new Color(235, 235, 235)).setPlotGridLinesStroke(new BasicStroke(0.5f));
        style.setLegendPosition(Styler.LegendPosition.InsideNW).setChartBackgroundColor(Color.WHITE);
        for (int c = 1; c < names.length; c++) {
            List<Double> xs = new ArrayList<>();
            List<Double> ys = new ArrayList<>();
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                double x;
                try {
                    x = Double.parseDouble(f[0]);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(args[0] + ": malformed size in \"" + line + "\"", e);
                }
                Double y = c < f.length ? positive(f[c]) : null;
                if (x > 0 && y != null) {
                    xs.add(x);
                    ys.add(y);
                }
            }
            if (!xs.isEmpty()) {
                XYSeries s = chart.addSeries(names[c], xs, ys);
                s.setMarker(SeriesMarkers.CIRCLE);
            }
        }
        BitmapEncoder.saveBitmap(chart, args[1], BitmapEncoder.BitmapFormat.PNG);
        System.out.println("plot: " + args[1]);
    }

    private static Double positive(String s) {
        try {
            double v = Double.parseDouble(s);
            return v > 0 && Double.isFinite(v) ? v : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
