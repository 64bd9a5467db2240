package io.hcomm4j.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Prints {@code hcomm perf} results like nccl-tests: a table for people, CSV whose columns match the
 * peer baselines' (so the two compare row by row), or one JSON document with the run's settings ({@link PerfJson}).
 */
final class PerfReport {
    /** The CSV header, exactly: existing tools parse these columns, so p50, p99 and max stay out of the CSV. */
    static final String CSV_HEADER = "op,algo,ranks,bytes,count,dtype,redop,root,time_us,algbw_gbs,busbw_gbs,wrong";

    /** Output formats of {@code hcomm perf}. */
    enum Format { TABLE, CSV, JSON }

    /** The width of the table's algo column: window-create-shm, the longest algo a bench prints, fits. */
    static final int ALGO_WIDTH = 17;

    /**
     * One result line.
     *
     * @param op       the measured op ({@code p2p}, later {@code allreduce} ...)
     * @param algo     how it was measured or which algorithm ran ({@code pingpong}, {@code stream} ...)
     * @param ranks    ranks of the job
     * @param bytes    message size in bytes
     * @param count    elements per message
     * @param dtype    element type ({@code int8}, {@code float32} ...)
     * @param redop    reduction op, {@code none} for data movement
     * @param root     root rank, -1 for rootless ops
     * @param timeUs   time per op in microseconds (median)
     * @param algbwGBs bytes / time in GB/s (1e9 B/s)
     * @param busbwGBs algbw times the op's bus factor
     * @param wrong    wrong bytes or elements found by the check, -1 when not checked
     * @param p50Us    median time per op in microseconds over the timed calls (nearest rank), NaN when the bench
     *                 does not time calls one by one (counter)
     * @param p99Us    99th percentile of the same, NaN when unknown
     * @param maxUs    the slowest of the same, NaN when unknown
     */
    record Row(String op, String algo, int ranks, long bytes, long count, String dtype, String redop, int root,
               double timeUs, double algbwGBs, double busbwGBs, long wrong, double p50Us, double p99Us, double maxUs) {
        /** A row without per-call figures (its p50, p99 and max unknown). */
        Row(String op, String algo, int ranks, long bytes, long count, String dtype, String redop, int root,
            double timeUs, double algbwGBs, double busbwGBs, long wrong) {
            this(op, algo, ranks, bytes, count, dtype, redop, root, timeUs, algbwGBs, busbwGBs, wrong, Double.NaN, Double.NaN,
                    Double.NaN);
        }

        /** This row with p50, p99 and max from {@code tailsUs} ({@link PerfReport#tailsUs}); itself when null. */
        Row withTails(double[] tailsUs) {
            if (tailsUs == null) return this;
            return new Row(op, algo, ranks, bytes, count, dtype, redop, root, timeUs, algbwGBs, busbwGBs, wrong,
                    tailsUs[0], tailsUs[1], tailsUs[2]);
        }
    }

    /**
     * The p50, p99 and max ({@link CollectiveBench#tails}, nearest rank) of {@code nanos}, each divided by {@code per}
     * (the ops one timed sample covers: 2 for a round trip's one-way time, a stream's window) in microseconds; null
     * for no samples.
     */
    static double[] tailsUs(long[] nanos, double per) {
        if (nanos == null || nanos.length == 0) return null;
        long[] q = CollectiveBench.tails(nanos);
        return new double[] {q[0] / 1e3 / per, q[1] / 1e3 / per, q[2] / 1e3 / per};
    }

    private final Format format;
    private final PrintStream out;
    /** JSON: what the header and rows said, written once the run is over ({@link #finish}). */
    private final List<String> notes = new ArrayList<>();
    private final List<Row> rows = new ArrayList<>();

    PerfReport(Format format, PrintStream out) {
        this.format = format;
        this.out = out;
    }

    /**
     * Prints the header: for a table, {@code notes} as comment lines and the column names; for CSV, the header; for
     * JSON, keeps the notes for {@link #finish}.
     */
    void header(String... notes) {
        if (format == Format.JSON) {
            this.notes.addAll(List.of(notes));
            return;
        }
        if (format == Format.CSV) {
            out.println(CSV_HEADER);
            return;
        }
        for (String note : notes) out.println("# " + note);
        out.println("#");
        // p50, p99, max after algo: the nccl-tests columns keep their places, which scripts and tests read by index
        out.println(String.format(Locale.ROOT, "#%11s %10s %7s %6s %5s %11s %13s %13s %7s  %-" + ALGO_WIDTH + "s %10s %10s %10s",
                "size", "count", "type", "redop", "root", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong", "algo",
                "p50 (us)", "p99 (us)", "max (us)"));
    }

    /** Prints one result (JSON: keeps it for {@link #finish}). */
    void row(Row r) {
        if (format == Format.JSON) {
            rows.add(r);
            return;
        }
        out.println(format == Format.CSV ? csv(r) : table(r));
    }

    /** JSON: prints the document of {@code settings}, the header's notes and every row; nothing for table or CSV. */
    void finish(Map<String, Object> settings) {
        if (format == Format.JSON) out.print(PerfJson.document(settings, notes, rows));
    }

    static String csv(Row r) {
        return String.format(Locale.ROOT, "%s,%s,%d,%d,%d,%s,%s,%d,%.3f,%.4f,%.4f,%d", r.op(), r.algo(), r.ranks(),
                r.bytes(), r.count(), r.dtype(), r.redop(), r.root(), r.timeUs(), r.algbwGBs(), r.busbwGBs(), r.wrong());
    }

    static String table(Row r) {
        return String.format(Locale.ROOT, "%12d %10d %7s %6s %5d %11.2f %13.3f %13.3f %7s  %-" + ALGO_WIDTH + "s %10s %10s %10s",
                r.bytes(), r.count(), r.dtype(), r.redop(), r.root(), r.timeUs(), r.algbwGBs(), r.busbwGBs(),
                r.wrong() < 0 ? "N/A" : Long.toString(r.wrong()), r.algo(), us(r.p50Us()), us(r.p99Us()), us(r.maxUs()));
    }

    /** A per-call figure of the table: N/A when the bench does not have it. */
    private static String us(double v) {
        return Double.isNaN(v) ? "N/A" : String.format(Locale.ROOT, "%.2f", v);
    }
}
