package io.hcomm4j.cli;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Prints {@code hcomm perf} results like nccl-tests: a table for people, or CSV whose columns match the
 * peer baselines' (so the two compare row by row).
 */
final class PerfReport {
    /** The CSV header, exactly. */
    static final String CSV_HEADER = "op,algo,ranks,bytes,count,dtype,redop,root,time_us,algbw_gbs,busbw_gbs,wrong";

    /** Output formats of {@code hcomm perf}. */
    enum Format { TABLE, CSV }

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
     */
    record Row(String op, String algo, int ranks, long bytes, long count, String dtype, String redop, int root,
               double timeUs, double algbwGBs, double busbwGBs, long wrong) {
    }

    private final Format format;
    private final PrintStream out;

    PerfReport(Format format, PrintStream out) {
        this.format = format;
        this.out = out;
    }

    /** Prints the header: for a table, {@code notes} as comment lines and the column names; for CSV, the header. */
    void header(String... notes) {
        if (format == Format.CSV) {
            out.println(CSV_HEADER);
            return;
        }
        for (String note : notes) out.println("# " + note);
        out.println("#");
        out.println(String.format(Locale.ROOT, "#%11s %10s %7s %6s %5s %11s %13s %13s %7s  %s",
                "size", "count", "type", "redop", "root", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong", "algo"));
    }

    /** Prints one result. */
    void row(Row r) {
        out.println(format == Format.CSV ? csv(r) : table(r));
    }

    static String csv(Row r) {
        return String.format(Locale.ROOT, "%s,%s,%d,%d,%d,%s,%s,%d,%.3f,%.4f,%.4f,%d", r.op(), r.algo(), r.ranks(),
                r.bytes(), r.count(), r.dtype(), r.redop(), r.root(), r.timeUs(), r.algbwGBs(), r.busbwGBs(), r.wrong());
    }

    static String table(Row r) {
        return String.format(Locale.ROOT, "%12d %10d %7s %6s %5d %11.2f %13.3f %13.3f %7s  %s", r.bytes(), r.count(),
                r.dtype(), r.redop(), r.root(), r.timeUs(), r.algbwGBs(), r.busbwGBs(),
                r.wrong() < 0 ? "N/A" : Long.toString(r.wrong()), r.algo());
    }
}
