package org.ddp4j.benchmarks;

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
 * Draws a table's columns against its first column into a PNG, one curve per column (XChart,
 * headless): bus bandwidth against message size, validation loss against step.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.ddp4j.benchmarks.CurvesPlot DATA.tsv OUT.png TITLE X_TITLE Y_TITLE [log]</pre>
 *
 * <p>DATA.tsv: a header line {@code X NAME1 NAME2 ...} then one line per x, whitespace separated;
 * values that are not numbers (or, on log axes, not positive) are left out. {@code log}: both
 * axes logarithmic. Needs fontconfig and a font (Debian {@code fontconfig}, {@code fonts-dejavu-core}).
 */
public final class CurvesPlot {
    private CurvesPlot() {}

    /**
     * Writes the plot.
     *
     * @throws IllegalArgumentException if the data has no header, no row or a malformed x
     * @throws IOException if DATA cannot be read or OUT cannot be written
     */
    public static void main(String[] args) throws IOException {
        if (args.length < 5) {
            System.err.println("usage: CurvesPlot DATA.tsv OUT.png TITLE X_TITLE Y_TITLE [log]");
            System.exit(2);
        }
        draw(Path.of(args[0]), args[1], args[2], args[3], args[4], args.length > 5 && args[5].equals("log"));
    }

    /** Draws DATA's columns against its first into OUT (PNG); log: both axes logarithmic. */
    public static void draw(Path data, String out, String title, String xTitle, String yTitle, boolean log)
            throws IOException {
        System.setProperty("java.awt.headless", "true");
        List<String> lines = Files.readAllLines(data).stream().filter(l -> !l.isBlank()).toList();
        if (lines.size() < 2) {
            throw new IllegalArgumentException(data + ": needs a header line and at least one row");
        }
        String[] names = lines.get(0).trim().split("\\s+");
        XYChart chart = new XYChartBuilder().width(900).height(560).title(title).xAxisTitle(xTitle).yAxisTitle(yTitle)
                .build();
        XYStyler style = chart.getStyler();
        style.setXAxisLogarithmic(log).setYAxisLogarithmic(log);
        // Log axes draw a line per minor tick: keep the grid faint so the curves stand out.
        style.setPlotGridLinesColor(new Color(235, 235, 235)).setPlotGridLinesStroke(new BasicStroke(0.5f));
        style.setLegendPosition(log ? Styler.LegendPosition.InsideNW : Styler.LegendPosition.InsideNE)
                .setChartBackgroundColor(Color.WHITE);
        for (int c = 1; c < names.length; c++) {
            List<Double> xs = new ArrayList<>();
            List<Double> ys = new ArrayList<>();
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                double x;
                try {
                    x = Double.parseDouble(f[0]);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(data + ": malformed x in \"" + line + "\"", e);
                }
                Double y = c < f.length ? number(f[c], log) : null;
                if ((!log || x > 0) && y != null) {
                    xs.add(x);
                    ys.add(y);
                }
            }
            if (!xs.isEmpty()) {
                XYSeries s = chart.addSeries(names[c], xs, ys);
                s.setMarker(SeriesMarkers.CIRCLE);
            }
        }
        BitmapEncoder.saveBitmap(chart, out, BitmapEncoder.BitmapFormat.PNG);
        System.out.println("plot: " + out);
    }

    private static Double number(String s, boolean positiveOnly) {
        try {
            double v = Double.parseDouble(s);
            return Double.isFinite(v) && (!positiveOnly || v > 0) ? v : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
