package io.hcomm4j.algo;

import io.hcomm4j.algo.Tuner.Algo;
import io.hcomm4j.algo.Tuner.LinkCost;
import io.hcomm4j.algo.Tuner.Op;
import io.hcomm4j.monitor.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A measured tuning table ({@code hcomm tune} writes it, {@code HCOMM_TUNING_FILE} loads it): entries keyed by a
 * topology {@link Signature}, each with the links' measured α, β, γ and, per collective, the algorithm that was fastest
 * in each size class. A communicator whose shape and transports match an entry takes the entry's choices; the others
 * (sub-communicators of another shape) keep the built-in model, as they had while {@code hcomm tune} measured the
 * entry (its links are recorded for the report and for {@code HCOMM_TUNE_AT_INIT}'s comparison). The {@link #fingerprint()} (SHA-256 of the file's bytes) is what the ranks compare at init: every rank of a
 * job must load the same file, or init fails naming the ranks that differ.
 *
 * <p>Format ({@code "format": "hcomm4j-tuning/1"}):
 * <pre>{@code
 * { "format": "hcomm4j-tuning/1",
 *   "entries": [ {
 *     "signature": { "ranks": 2, "hosts": 2, "min_per_host": 1, "max_per_host": 1,
 *                    "within": "none", "between": "tcp", "between_gbps": 1.9 },
 *     "links": { "between": { "alpha_us": 48.0, "gbps": 1.9, "reduce_gbps": 5.0 } },
 *     "choices": { "allreduce": [ { "up_to": 8192, "algo": "recursive_doubling" }, { "up_to": null, "algo": "ring" } ] },
 *     "measured": { "sizes": [8, 64], "allreduce": { "ring": [0.000051, 0.000052] } } } ] }
 * }</pre>
 * {@code up_to} is inclusive, in bytes of the whole vector; the last step's {@code null} means no bound. Sizes in
 * {@code measured} are the sweep's (seconds per call, the slowest rank's mean), kept for reports.
 */
public final class TuningTable {
    /** The format tag this version reads and writes. */
    public static final String FORMAT = "hcomm4j-tuning/1";

    /**
     * Where a table applies: ranks, hosts, the fewest and most ranks of one host, the transport within a host
     * ({@code shm}, {@code tcp} or {@code none} when every host has one rank) and between hosts ({@code tcp} or
     * {@code none} on one host), and the measured bandwidth between hosts (recorded, not compared: init does not
     * measure links).
     */
    public record Signature(int ranks, int hosts, int minPerHost, int maxPerHost, String within, String between,
                            double betweenGbps) {
        /** Whether {@code other} is the same topology (everything but the measured speed). */
        public boolean sameTopology(Signature other) {
            return ranks == other.ranks && hosts == other.hosts && minPerHost == other.minPerHost
                    && maxPerHost == other.maxPerHost && within.equals(other.within) && between.equals(other.between);
        }

        /** The signature of ranks placed as {@code shape}, on links of the given transports. */
        public static Signature of(Tuner.Shape shape, String withinTransport, String betweenTransport) {
            return new Signature(shape.ranks(), shape.hosts(), shape.minLocal(), shape.maxLocal(),
                    shape.maxLocal() > 1 ? withinTransport : "none", shape.hosts() > 1 ? betweenTransport : "none", 0);
        }

        @Override
        public String toString() {
            return ranks + " ranks on " + hosts + " hosts (" + minPerHost + "-" + maxPerHost + " a host), within " + within
                    + ", between " + between;
        }
    }

    /** From this size (inclusive, bytes) down to the previous step's, {@code algo}. */
    public record Step(long upTo, Algo algo) {
    }

    /**
     * One table.
     *
     * @param between  measured link between hosts, or null
     * @param within   measured link within a host, or null
     * @param choices  per op, steps in increasing {@code upTo}, the last unbounded
     * @param sizes    the measured sizes (bytes), for reports
     * @param measured per op and algorithm, seconds per call at each of {@code sizes}
     */
    public record Entry(Signature signature, LinkCost between, LinkCost within, Map<Op, List<Step>> choices,
                        long[] sizes, Map<Op, Map<Algo, double[]>> measured) {
        /** The algorithm this entry chose for {@code op} on {@code bytes}, or null if it has no choice for {@code op}. */
        public Algo choice(Op op, long bytes) {
            List<Step> steps = choices.get(op);
            if (steps == null) return null;
            for (Step s : steps) if (bytes <= s.upTo) return s.algo;
            return steps.getLast().algo;
        }
    }

    private final List<Entry> entries;
    private final String fingerprint;
    private final String source;

    private TuningTable(List<Entry> entries, String fingerprint, String source) {
        this.entries = List.copyOf(entries);
        this.fingerprint = fingerprint;
        this.source = source;
    }

    /** A table of {@code entries} (not read from a file: fingerprint of its JSON). */
    public static TuningTable of(List<Entry> entries) {
        return new TuningTable(entries, sha256(json(entries).getBytes(StandardCharsets.UTF_8)), "memory");
    }

    /** @throws IllegalArgumentException naming the file and what is wrong in it */
    public static TuningTable read(Path file) {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new IllegalArgumentException("tuning file " + file + " (HCOMM_TUNING_FILE): cannot read it: " + e, e);
        }
        try {
            return parse(new String(bytes, StandardCharsets.UTF_8), sha256(bytes), file.toString());
        } catch (IllegalArgumentException | ClassCastException | NullPointerException e) {
            throw new IllegalArgumentException("tuning file " + file + " (HCOMM_TUNING_FILE): " + e.getMessage(), e);
        }
    }

    /** Parses {@code json}; the fingerprint is that of its UTF-8 bytes. */
    public static TuningTable parse(String json) {
        return parse(json, sha256(json.getBytes(StandardCharsets.UTF_8)), "text");
    }

    @SuppressWarnings("unchecked")
    private static TuningTable parse(String json, String fingerprint, String source) {
        if (!(Json.parse(json) instanceof Map<?, ?> root)) throw new IllegalArgumentException("not a JSON object");
        Object format = root.get("format");
        if (!FORMAT.equals(format)) {
            throw new IllegalArgumentException("format is " + format + ", this version reads " + FORMAT);
        }
        if (!(root.get("entries") instanceof List<?> list)) throw new IllegalArgumentException("no \"entries\" array");
        List<Entry> entries = new ArrayList<>();
        for (Object o : list) entries.add(entry((Map<String, Object>) o, entries.size()));
        return new TuningTable(entries, fingerprint, source);
    }

    @SuppressWarnings("unchecked")
    private static Entry entry(Map<String, Object> m, int index) {
        String where = "entries[" + index + "]";
        Map<String, Object> sig = (Map<String, Object>) require(m, "signature", where);
        Signature s = new Signature(integer(sig, "ranks", where), integer(sig, "hosts", where),
                integer(sig, "min_per_host", where), integer(sig, "max_per_host", where),
                transport(sig, "within", where), transport(sig, "between", where),
                sig.get("between_gbps") instanceof Double d ? d : 0);
        Map<String, Object> links = (Map<String, Object>) m.getOrDefault("links", Map.of());
        Map<Op, List<Step>> choices = new EnumMap<>(Op.class);
        Map<String, Object> cs = (Map<String, Object>) m.getOrDefault("choices", Map.of());
        for (Map.Entry<String, Object> e : cs.entrySet()) {
            Op op = op(e.getKey(), where);
            List<Step> steps = new ArrayList<>();
            long last = -1;
            for (Object x : (List<Object>) e.getValue()) {
                Map<String, Object> st = (Map<String, Object>) x;
                Object up = st.get("up_to");
                long upTo = up == null ? Long.MAX_VALUE : ((Double) up).longValue();
                if (upTo <= last) {
                    throw new IllegalArgumentException(where + ".choices." + e.getKey() + ": up_to must increase, "
                            + upTo + " after " + last);
                }
                last = upTo;
                Algo a = algo(op, (String) st.get("algo"), where);
                steps.add(new Step(upTo, a));
            }
            if (steps.isEmpty() || last != Long.MAX_VALUE) {
                throw new IllegalArgumentException(where + ".choices." + e.getKey() + ": the last step needs \"up_to\": null");
            }
            choices.put(op, List.copyOf(steps));
        }
        long[] sizes = new long[0];
        Map<Op, Map<Algo, double[]>> measured = new EnumMap<>(Op.class);
        if (m.get("measured") instanceof Map<?, ?> ms) {
            if (ms.get("sizes") instanceof List<?> sz) sizes = sz.stream().mapToLong(x -> ((Double) x).longValue()).toArray();
            for (Map.Entry<?, ?> e : ms.entrySet()) {
                if (e.getKey().equals("sizes")) continue;
                Op op = op((String) e.getKey(), where);
                Map<Algo, double[]> per = new EnumMap<>(Algo.class);
                for (Map.Entry<?, ?> a : ((Map<?, ?>) e.getValue()).entrySet()) {
                    per.put(algo(op, (String) a.getKey(), where),
                            ((List<?>) a.getValue()).stream().mapToDouble(x -> x == null ? Double.NaN : (Double) x).toArray());
                }
                measured.put(op, per);
            }
        }
        return new Entry(s, link(links.get("between"), where), link(links.get("within"), where), choices, sizes, measured);
    }

    private static Object require(Map<String, Object> m, String key, String where) {
        Object v = m.get(key);
        if (v == null) throw new IllegalArgumentException(where + ": no \"" + key + "\"");
        return v;
    }

    private static int integer(Map<String, Object> m, String key, String where) {
        if (!(m.get(key) instanceof Double d) || d != Math.rint(d) || d < 0) {
            throw new IllegalArgumentException(where + ".signature." + key + ": a whole number >= 0, was " + m.get(key));
        }
        return d.intValue();
    }

    private static String transport(Map<String, Object> m, String key, String where) {
        Object v = m.get(key);
        if (!(v instanceof String s) || !List.of("shm", "tcp", "none").contains(s)) {
            throw new IllegalArgumentException(where + ".signature." + key + ": one of shm, tcp, none, was " + v);
        }
        return s;
    }

    private static Op op(String name, String where) {
        for (Op o : Op.values()) if (Tuner.name(o).equals(name)) return o;
        throw new IllegalArgumentException(where + ": unknown collective '" + name + "'");
    }

    private static Algo algo(Op op, String name, String where) {
        for (Algo a : Tuner.SERVES.get(op)) if (Tuner.name(a).equals(name)) return a;
        throw new IllegalArgumentException(where + ": '" + name + "' is not an algorithm of " + Tuner.name(op) + " (one of "
                + Tuner.SERVES.get(op).stream().map(Tuner::name).toList() + ")");
    }

    @SuppressWarnings("unchecked")
    private static LinkCost link(Object o, String where) {
        if (o == null) return null;
        Map<String, Object> m = (Map<String, Object>) o;
        double alphaUs = (Double) require(m, "alpha_us", where + ".links");
        double gbps = (Double) require(m, "gbps", where + ".links");
        double reduce = (Double) require(m, "reduce_gbps", where + ".links");
        if (!(alphaUs >= 0) || !(gbps > 0) || !(reduce > 0)) {
            throw new IllegalArgumentException(where + ".links: alpha_us >= 0, gbps and reduce_gbps > 0");
        }
        return new LinkCost(alphaUs * 1e-6, 1 / (gbps * 1e9), 1 / (reduce * 1e9));
    }

    /** The table as JSON (the format above). */
    public String toJson() {
        return json(entries);
    }

    private static String json(List<Entry> entries) {
        List<Object> list = new ArrayList<>();
        for (Entry e : entries) {
            Map<String, Object> m = new LinkedHashMap<>();
            Signature s = e.signature;
            Map<String, Object> sig = new LinkedHashMap<>();
            sig.put("ranks", (double) s.ranks);
            sig.put("hosts", (double) s.hosts);
            sig.put("min_per_host", (double) s.minPerHost);
            sig.put("max_per_host", (double) s.maxPerHost);
            sig.put("within", s.within);
            sig.put("between", s.between);
            sig.put("between_gbps", round(s.betweenGbps));
            m.put("signature", sig);
            Map<String, Object> links = new LinkedHashMap<>();
            if (e.between != null) links.put("between", linkJson(e.between));
            if (e.within != null) links.put("within", linkJson(e.within));
            m.put("links", links);
            Map<String, Object> cs = new LinkedHashMap<>();
            for (Map.Entry<Op, List<Step>> c : e.choices.entrySet()) {
                List<Object> steps = new ArrayList<>();
                for (Step st : c.getValue()) {
                    Map<String, Object> x = new LinkedHashMap<>();
                    x.put("up_to", st.upTo == Long.MAX_VALUE ? null : (double) st.upTo);
                    x.put("algo", Tuner.name(st.algo));
                    steps.add(x);
                }
                cs.put(Tuner.name(c.getKey()), steps);
            }
            m.put("choices", cs);
            Map<String, Object> ms = new LinkedHashMap<>();
            List<Object> sizes = new ArrayList<>();
            for (long z : e.sizes) sizes.add((double) z);
            ms.put("sizes", sizes);
            for (Map.Entry<Op, Map<Algo, double[]>> c : e.measured.entrySet()) {
                Map<String, Object> per = new LinkedHashMap<>();
                for (Map.Entry<Algo, double[]> a : c.getValue().entrySet()) {
                    List<Object> t = new ArrayList<>();
                    for (double v : a.getValue()) t.add(Double.isNaN(v) ? null : v);
                    per.put(Tuner.name(a.getKey()), t);
                }
                ms.put(Tuner.name(c.getKey()), per);
            }
            m.put("measured", ms);
            list.add(m);
        }
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("format", FORMAT);
        root.put("entries", list);
        return Json.write(root);
    }

    private static Map<String, Object> linkJson(LinkCost c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("alpha_us", round(c.alpha() * 1e6));
        m.put("gbps", round(1 / c.beta() / 1e9));
        m.put("reduce_gbps", round(1 / c.gamma() / 1e9));
        return m;
    }

    private static double round(double v) {
        return Double.parseDouble(String.format(Locale.ROOT, "%.4g", v));
    }

    /** The entries, in file order. */
    public List<Entry> entries() {
        return entries;
    }

    /** The last entry for the same topology as {@code s} (a later measurement wins), or null. */
    public Entry find(Signature s) {
        return find(s, 0);
    }

    /** How far a link may measure from the speed an entry was tuned at and still take its choices: a factor of 2. */
    public static final double SPEED_TOLERANCE = 2.0;

    /**
     * The entry for the same topology as {@code s} whose link speed between hosts is nearest {@code gbps} (as a ratio)
     * and within {@link #SPEED_TOLERANCE} of it, a later one winning a tie; an entry without a speed matches any. With
     * {@code gbps} 0 (not measured) the speed is not compared: the last entry of the topology. Null if none.
     */
    public Entry find(Signature s, double gbps) {
        Entry found = null;
        double best = Double.MAX_VALUE;
        for (Entry e : entries) {
            if (!e.signature.sameTopology(s)) continue;
            double tuned = e.signature.betweenGbps();
            double off = gbps > 0 && tuned > 0 ? Math.abs(Math.log(gbps / tuned)) : 0;
            if (off > Math.log(SPEED_TOLERANCE) || off > best) continue;
            best = off;
            found = e;
        }
        return found;
    }

    /** SHA-256 of the file's bytes, hex, first 16 digits: what ranks compare at init. */
    public String fingerprint() {
        return fingerprint;
    }

    /** Where it was read from (a path, or "text"/"memory"). */
    public String source() {
        return source;
    }

    /**
     * The steps of a choice made at each size of a sweep ({@code choice[k]} at {@code sizes[k]}; null: none there): a
     * step per run of equal choices, its bound halfway (geometric) to the next measured size.
     */
    public static List<Step> steps(long[] sizes, Algo[] choice) {
        List<Step> steps = new ArrayList<>();
        Algo prev = null;
        long prevSize = 0;
        for (int k = 0; k < sizes.length; k++) {
            Algo a = choice[k];
            if (a == null) continue;
            if (prev != null && a != prev) steps.add(new Step((long) Math.sqrt((double) prevSize * sizes[k]), prev));
            prev = a;
            prevSize = sizes[k];
        }
        if (prev != null) steps.add(new Step(Long.MAX_VALUE, prev));
        return steps;
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes), 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
