package io.hcomm4j.algo;

import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Picks an algorithm per (op, bytes, ranks) with the alpha-beta cost model: a message costs α + bytes·β on
 * a link and reducing costs bytes·γ; each algorithm's cost is its formula over those; the cheapest wins.
 * {@code HCOMM_ALGO} (e.g. {@code allreduce=ring;broadcast=tree}) forces a choice per op.
 *
 * <p>α, β, γ come from a table per link type (TCP over loopback, measured on the project's machines with
 * {@code hcomm perf p2p} and the kernel benchmark) until the tuner measures them at init.
 */
public final class Tuner {
    /** Collective ops whose algorithm can be chosen. */
    public enum Op { ALLREDUCE, BROADCAST, REDUCE, ALLGATHER, REDUCESCATTER, GATHER, SCATTER, ALLTOALL, BARRIER }

    /** Algorithms; each serves the ops in {@link #SERVES}. */
    public enum Algo { RING, RECURSIVE_DOUBLING, HALVING_DOUBLING, TREE, CHAIN, BRUCK, PAIRWISE, DISSEMINATION }

    /** Which algorithms each op has. */
    public static final Map<Op, List<Algo>> SERVES;

    static {
        Map<Op, List<Algo>> m = new EnumMap<>(Op.class);
        m.put(Op.ALLREDUCE, List.of(Algo.RING, Algo.RECURSIVE_DOUBLING, Algo.HALVING_DOUBLING));
        m.put(Op.BROADCAST, List.of(Algo.TREE, Algo.CHAIN));
        m.put(Op.REDUCE, List.of(Algo.TREE));
        m.put(Op.ALLGATHER, List.of(Algo.RING, Algo.BRUCK));
        m.put(Op.REDUCESCATTER, List.of(Algo.RING, Algo.HALVING_DOUBLING));
        m.put(Op.GATHER, List.of(Algo.TREE));
        m.put(Op.SCATTER, List.of(Algo.TREE));
        m.put(Op.ALLTOALL, List.of(Algo.PAIRWISE, Algo.BRUCK));
        m.put(Op.BARRIER, List.of(Algo.DISSEMINATION));
        SERVES = java.util.Collections.unmodifiableMap(m);
    }

    /** Cost parameters of a link type, in seconds and seconds per byte. */
    public record LinkCost(double alpha, double beta, double gamma) {
        /** TCP over loopback on the project's 2-core machines: ~6 µs one-way, ~4 GB/s, reduction ~5 GB/s. */
        public static final LinkCost TCP_LOOPBACK = new LinkCost(8e-6, 1 / 4.0e9, 1 / 5.0e9);
    }

    /** Seconds per byte of a local copy (rotating and packing blocks): ~10 GB/s. */
    private static final double COPY = 1 / 10e9;

    private final LinkCost cost;
    private final Map<Op, Algo> forced;

    /** @param forced the parsed {@code HCOMM_ALGO} (op → algorithm), possibly empty */
    public Tuner(LinkCost cost, Map<Op, Algo> forced) {
        this.cost = cost;
        this.forced = Map.copyOf(forced);
    }

    /**
     * Parses {@code HCOMM_ALGO}: {@code op=algo} pairs separated by {@code ;} or {@code ,}, case-insensitive,
     * {@code -} or {@code _} alike ({@code rd} is short for recursive_doubling; {@code hd} and {@code rabenseifner}
     * for halving_doubling).
     *
     * @throws IllegalArgumentException naming the bad part and listing the valid choices
     */
    public static Map<Op, Algo> parse(String spec) {
        Map<Op, Algo> out = new LinkedHashMap<>();
        if (spec == null || spec.isBlank()) return out;
        for (String part : spec.split("[;,]")) {
            if (part.isBlank()) continue;
            String[] kv = part.split("=", 2);
            if (kv.length != 2) throw new IllegalArgumentException("'" + part.trim() + "' is not op=algorithm; " + choices());
            Op op;
            try {
                op = Op.valueOf(norm(kv[0]).replace("_", ""));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown op '" + kv[0].trim() + "'; " + choices());
            }
            String a = norm(kv[1]);
            if (a.equals("RD")) a = "RECURSIVE_DOUBLING";
            if (a.equals("HD") || a.equals("RABENSEIFNER")) a = "HALVING_DOUBLING";
            if (a.equals("BINOMIAL") || a.equals("BINOMIAL_TREE")) a = "TREE";
            Algo algo;
            try {
                algo = Algo.valueOf(a);
            } catch (IllegalArgumentException e) {
                algo = null;
            }
            if (algo == null || !SERVES.get(op).contains(algo)) {
                throw new IllegalArgumentException("'" + kv[1].trim() + "' is not an algorithm of " + name(op) + "; valid: "
                        + SERVES.get(op).stream().map(Tuner::name).toList() + " (" + choices() + ")");
            }
            out.put(op, algo);
        }
        return out;
    }

    private static String norm(String s) {
        return s.trim().toUpperCase(Locale.ROOT).replace('-', '_');
    }

    /** Lower-case name as written in HCOMM_ALGO. */
    public static String name(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }

    /** "valid: allreduce=ring|recursive_doubling; ..." */
    public static String choices() {
        StringBuilder sb = new StringBuilder("valid: ");
        SERVES.forEach((op, algos) -> sb.append(name(op)).append('=')
                .append(String.join("|", algos.stream().map(Tuner::name).toList())).append("; "));
        return sb.substring(0, sb.length() - 2);
    }

    /** The forced algorithm of {@code op}, if HCOMM_ALGO names one. */
    public Algo forced(Op op) {
        return forced.get(op);
    }

    /** The algorithm for {@code op} on {@code bytes} (the whole vector) over {@code n} ranks; ties go to the first in {@link #SERVES}. */
    public Algo choose(Op op, long bytes, int n) {
        Algo f = forced.get(op);
        if (f != null) return f;
        List<Algo> candidates = SERVES.get(op);
        if (candidates.size() == 1) return candidates.get(0);
        Algo best = null;
        double bestCost = Double.MAX_VALUE;
        for (Algo a : candidates) {
            double c = cost(op, a, bytes, n);
            // a tie (e.g. ring and halving-doubling on two ranks are the same exchange) goes to the first listed,
            // whatever the rounding of the two formulas, so the choice does not flip from size to size
            if (c < bestCost * (1 - 1e-9)) {
                bestCost = c;
                best = a;
            }
        }
        return best;
    }

    /**
     * The ring's chunk, in bytes, for blocks of {@code blockBytes}: a quarter of a block, so every step pipelines
     * (reducing one chunk overlaps receiving the next), within [512 KiB, 1 MiB] — never more than the block. Measured
     * on 2 ranks over loopback TCP, busbw, median timing: at 1 MiB (512 KiB blocks) one 512 KiB chunk per block
     * 6.4–6.7 GB/s against two of 256 KiB 5.3–5.6; at 2 MiB two 512 KiB chunks 5.6–5.7 against one of 1 MiB
     * 2.9–3.5; at 16 MiB 1 MiB chunks 1.72–1.88 against 256 KiB 1.25–1.37 (earlier code).
     */
    public static long ringChunkBytes(long blockBytes) {
        return Math.max(512 * 1024, Math.min(1024 * 1024, blockBytes / 4));
    }

    /** Modelled seconds of {@code algo} for {@code op}. Public for tests and `hcomm perf`. */
    public double cost(Op op, Algo algo, long bytes, int n) {
        double a = cost.alpha();
        double b = cost.beta();
        double g = cost.gamma();
        double m = bytes;
        int lg = 32 - Integer.numberOfLeadingZeros(Math.max(1, n - 1));
        boolean pof2 = Integer.bitCount(n) == 1;
        return switch (algo) {
            case RING -> {
                double block = m / n;
                double pass = (n - 1) * (a + block * b);
                // a reduce step takes its block in chunks with several in flight, so reducing a chunk overlaps
                // receiving the next ones and only the last chunk's reduction is exposed (all of it if one chunk)
                double reducePass = (n - 1) * (a + block * Math.max(b, g) + Math.min(block, ringChunkBytes((long) block)) * Math.min(b, g));
                yield switch (op) {
                    case ALLREDUCE -> reducePass + pass;
                    case REDUCESCATTER -> reducePass;
                    default -> pass;
                };
            }
            case RECURSIVE_DOUBLING -> (lg + (pof2 ? 0 : 2)) * (a + m * b) + lg * m * g;
            case HALVING_DOUBLING -> {
                // Thakur, Rabenseifner & Gropp 2005 over the p = 2^floor(log2 n) ranks that run it, plus the fold of
                // the other n - p ranks: one whole vector in and reduced before, one message back after
                int p = Integer.highestOneBit(n);
                int lgp = Integer.numberOfTrailingZeros(p);
                double frac = (p - 1.0) / p;
                double foldIn = p == n ? 0 : a + m * (b + g);
                yield switch (op) {
                    case REDUCESCATTER -> lgp * a + frac * m * (b + g) + foldIn + (p == n ? 0 : a + m / n * b);
                    default -> 2.0 * lgp * a + 2 * frac * m * b + frac * m * g + foldIn + (p == n ? 0 : a + m * b);
                };
            }
            case TREE -> lg * (a + m * b);
            case CHAIN -> {
                double chunks = Math.max(1, Math.ceil(m / (1 << 20)));
                yield (n - 2 + chunks) * (a + m / chunks * b);
            }
            case BRUCK -> {
                if (op != Op.ALLTOALL) yield lg * a + (n - 1.0) / n * m * b + m * COPY;
                // about half the blocks each round (exactly half for powers of two: (m/2)·log2 n, as in Thakur et
                // al. 2005); each moved block is packed and unpacked, and every block is rotated in and out
                double moved = 0;
                for (int k = 1; k < n; k <<= 1) moved += AllToAll.positions(n, k) * (m / n);
                yield lg * a + moved * b + (2 * m + 2 * moved) * COPY;
            }
            case PAIRWISE -> (n - 1) * (a + m / n * b);
            case DISSEMINATION -> lg * a;
        };
    }
}
