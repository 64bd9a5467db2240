package io.hcomm4j.cli;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.axis.TickUnits;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * {@code hcomm perf --plot FILE.png}: bus bandwidth (GB/s) against size (log2 axis), one line per (op, algo),
 * drawn with JFreeChart without a display (headless AWT); {@code --compare} overlays saved runs ({@link PerfRuns}).
 */
final class PerfPlot {
    static final int WIDTH = 960;
    static final int HEIGHT = 600;

    private PerfPlot() {
    }

    /** Writes the chart of {@code rows} to {@code file} as a PNG. */
    static void write(Path file, String title, List<PerfReport.Row> rows) throws IOException {
        write(file, title, rows, List.of());
    }

    /**
     * Writes the chart of {@code rows} and of the saved runs {@code others} to {@code file} as a PNG: a line per
     * (op, algo) of each; with saved runs, each line's name starts with its run's label ("this run" for {@code rows}).
     */
    static void write(Path file, String title, List<PerfReport.Row> rows, List<PerfRuns.Run> others) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Map<String, XYSeries> series = new LinkedHashMap<>();
        add(series, others.isEmpty() ? "" : "this run: ", rows);
        for (PerfRuns.Run run : others) add(series, run.label() + ": ", run.rows());
        XYSeriesCollection data = new XYSeriesCollection();
        series.values().forEach(data::addSeries);

        LogAxis x = new LogAxis("size (bytes, log2)");
        x.setBase(2);
        TickUnits powers = new TickUnits();
        for (int k = 1; k <= 8; k *= 2) powers.add(new NumberTickUnit(k));
        x.setStandardTickUnits(powers); // whole exponents: 1K, 4K, 16K ...
        x.setNumberFormatOverride(new SizeFormat());
        x.setSmallestValue(1);
        NumberAxis y = new NumberAxis("busbw (GB/s)");
        y.setAutoRangeIncludesZero(true);

        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        for (int s = 0; s < data.getSeriesCount(); s++) renderer.setSeriesStroke(s, new BasicStroke(2f));
        XYPlot plot = new XYPlot(data, x, y, renderer);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        JFreeChart chart = new JFreeChart(title, JFreeChart.DEFAULT_TITLE_FONT, plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) java.nio.file.Files.createDirectories(parent);
        ChartUtils.saveChartAsPNG(file.toFile(), chart, WIDTH, HEIGHT);
    }

    private static void add(Map<String, XYSeries> series, String prefix, List<PerfReport.Row> rows) {
        for (PerfReport.Row r : rows) {
            String key = prefix + r.op() + " " + r.algo();
            series.computeIfAbsent(key, k -> new XYSeries(k, true, true)).addOrUpdate(r.bytes(), r.busbwGBs());
        }
    }

    /** Tick labels of the size axis: 512, 4K, 64M, 1G (powers of 1024), as nccl-tests sizes are given. */
    static final class SizeFormat extends NumberFormat {
        @Override
        public StringBuffer format(double number, StringBuffer to, FieldPosition pos) {
            return format(Math.round(number), to, pos);
        }

        @Override
        public StringBuffer format(long v, StringBuffer to, FieldPosition pos) {
            String[] units = {"", "K", "M", "G", "T"};
            int u = 0;
            double d = v;
            while (u < units.length - 1 && Math.abs(d) >= 1024) {
                d /= 1024;
                u++;
            }
            String num = d == Math.rint(d) ? Long.toString((long) d) : String.format(java.util.Locale.ROOT, "%.1f", d);
            return to.append(num).append(units[u]);
        }

        @Override
        public Number parse(String source, ParsePosition pos) {
            throw new UnsupportedOperationException("labels only");
        }
    }
}
