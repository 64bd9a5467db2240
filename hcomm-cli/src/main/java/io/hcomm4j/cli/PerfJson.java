package io.hcomm4j.cli;

import io.hcomm4j.monitor.Json;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code hcomm perf --format json}: one document with the run's settings, the header's notes and every row with all
 * its fields (the CSV's, plus p50, p99 and max), written by the core's {@link Json} so that {@link PerfRuns} and any
 * script read it back without guessing at column positions.
 */
final class PerfJson {
    /** The keys of a row, in the CSV's order, then the per-call figures. */
    static final List<String> ROW_KEYS = List.of("op", "algo", "ranks", "bytes", "count", "dtype", "redop", "root", "time_us",
            "algbw_gbs", "busbw_gbs", "wrong", "p50_us", "p99_us", "max_us");

    private PerfJson() {
    }

    /** The document: {@code {"settings": ..., "notes": [...], "rows": [...]}}, a newline at its end. */
    static String document(Map<String, Object> settings, List<String> notes, List<PerfReport.Row> rows) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("settings", settings);
        doc.put("notes", List.copyOf(notes));
        List<Object> list = new ArrayList<>();
        for (PerfReport.Row r : rows) list.add(row(r));
        doc.put("rows", list);
        return Json.write(doc);
    }

    /** One row as a map of {@link #ROW_KEYS}; an unknown figure (NaN) is null, which JSON can carry. */
    static Map<String, Object> row(PerfReport.Row r) {
        Object[] values = {r.op(), r.algo(), r.ranks(), r.bytes(), r.count(), r.dtype(), r.redop(), r.root(), num(r.timeUs()),
            num(r.algbwGBs()), num(r.busbwGBs()), r.wrong(), num(r.p50Us()), num(r.p99Us()), num(r.maxUs())};
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < values.length; i++) m.put(ROW_KEYS.get(i), values[i]);
        return m;
    }

    /** A row back from its map; throws IllegalArgumentException naming a missing or mistyped key. */
    static PerfReport.Row row(Object value) {
        if (!(value instanceof Map<?, ?> m)) throw new IllegalArgumentException("a row is not an object: " + value);
        return new PerfReport.Row(text(m, "op"), text(m, "algo"), (int) whole(m, "ranks"), whole(m, "bytes"), whole(m, "count"),
                text(m, "dtype"), text(m, "redop"), (int) whole(m, "root"), real(m, "time_us"), real(m, "algbw_gbs"),
                real(m, "busbw_gbs"), whole(m, "wrong"), real(m, "p50_us"), real(m, "p99_us"), real(m, "max_us"));
    }

    /**
     * The settings of {@code c}'s run on {@code ranks} ranks: what a later reader needs to know what was measured.
     * {@code transport} is rank 0's transport to rank 1 (null with one rank); iters and warmup null mean the defaults
     * by size (--help), algo null that the library chose.
     */
    static Map<String, Object> settings(PerfCommand c, CollectiveBench.Coll coll, int ranks, String transport) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("op", c.op);
        m.put("ranks", ranks);
        m.put("transport", transport);
        m.put("hcomm_transport", c.parent.env.get("HCOMM_TRANSPORT"));
        m.put("memory", c.mem.name().toLowerCase(java.util.Locale.ROOT));
        m.put("in_place", c.inPlace);
        // the collectives time as --timing says; the others take the median of calls timed alone, counter a loop mean
        m.put("timing", coll != null ? c.timing.name().toLowerCase(java.util.Locale.ROOT) : c.op.equals("counter") ? "loop mean" : "median");
        String algo = coll == null ? c.algo : PerfCommand.algoLabel(coll, c.algo, c.parent.env);
        m.put("algo", algo == null || algo.equals("auto") ? null : algo);
        if (coll != null) {
            m.put("dtype", PerfCommand.typeName(c.dtype));
            m.put("redop", PerfCommand.opName(c.redop));
            m.put("root", c.root);
        }
        if (RmaBench.Op.of(c.op).isPresent()) m.put("window", c.window.name().toLowerCase(java.util.Locale.ROOT));
        if (c.op.equals("transfer")) m.put("batch", c.batch);
        m.put("iters", c.iters);
        m.put("warmup", c.warmup);
        m.put("jit_warmup", c.jitWarmUp());
        m.put("check", c.check);
        m.put("jdk", System.getProperty("java.version") + " (" + System.getProperty("java.vendor") + ")");
        m.put("version", HcommCli.Version.version());
        m.put("date", java.time.OffsetDateTime.now(java.time.ZoneOffset.UTC).withNano(0).toString());
        return m;
    }

    private static Object num(double v) {
        return Double.isFinite(v) ? v : null;
    }

    private static String text(Map<?, ?> m, String key) {
        if (m.get(key) instanceof String s) return s;
        throw new IllegalArgumentException("a row has no text \"" + key + "\": " + m);
    }

    private static long whole(Map<?, ?> m, String key) {
        if (m.get(key) instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue())) return n.longValue();
        throw new IllegalArgumentException("a row has no whole number \"" + key + "\": " + m);
    }

    /** A figure, NaN when null or absent (p50, p99, max of a run that did not have them). */
    private static double real(Map<?, ?> m, String key) {
        Object v = m.get(key);
        if (v == null) return Double.NaN;
        if (v instanceof Number n) return n.doubleValue();
        throw new IllegalArgumentException("a row's \"" + key + "\" is not a number: " + m);
    }
}
