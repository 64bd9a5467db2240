package io.hcomm4j.algo;

import io.hcomm4j.Topology;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Picks an algorithm per (op, bytes, ranks, hosts) with the alpha-beta cost model: a message costs α + bytes·β on
 * a link and reducing costs bytes·γ; each algorithm's cost is its formula over those; the cheapest wins.
 * {@code HCOMM_ALGO} (e.g. {@code allreduce=ring;broadcast=tree}) forces a choice per op.
 *
 * <p>Two link types: between hosts (TCP) and within a host (shared-memory rings, or TCP over loopback with
 * {@code HCOMM_TRANSPORT=tcp}). Flat algorithms are costed with the link between hosts (on one host too: the table
 * the flat choices were tuned with). {@link Algo#HIERARCHICAL} runs each level over its own link: its cost is the sum
 * of its levels, each level being the cheapest flat algorithm for that level's group. It is a candidate only when the
 * ranks span more than one host and some host has several of them ({@link Shape#multiLevel()}).
 *
 * <p>α, β, γ come from a table per link type (measured on the project's machines with {@code hcomm perf p2p} and
 * the kernel benchmark, see {@link LinkCost}) until the tuner measures them at init.
 */
public final class Tuner {
    /** Collective ops whose algorithm can be chosen. */
    public enum Op { ALLREDUCE, BROADCAST, REDUCE, ALLGATHER, REDUCESCATTER, GATHER, SCATTER, ALLTOALL, BARRIER }

    /** Algorithms; each serves the ops in {@link #SERVES}. */
    public enum Algo { RING, RECURSIVE_DOUBLING, HALVING_DOUBLING, TREE, CHAIN, BRUCK, PAIRWISE, DISSEMINATION, HIERARCHICAL }

    /** Which algorithms each op has. */
    public static final Map<Op, List<Algo>> SERVES;

    static {
        Map<Op, List<Algo>> m = new EnumMap<>(Op.class);
        m.put(Op.ALLREDUCE, List.of(Algo.RING, Algo.RECURSIVE_DOUBLING, Algo.HALVING_DOUBLING, Algo.HIERARCHICAL));
        m.put(Op.BROADCAST, List.of(Algo.TREE, Algo.CHAIN, Algo.HIERARCHICAL));
        m.put(Op.REDUCE, List.of(Algo.TREE));
        m.put(Op.ALLGATHER, List.of(Algo.RING, Algo.BRUCK, Algo.HIERARCHICAL));
        m.put(Op.REDUCESCATTER, List.of(Algo.RING, Algo.HALVING_DOUBLING, Algo.HIERARCHICAL));
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
        /**
         * Shared-memory rings between two ranks of one host, same machines: ~1.5 µs one-way, ~10 GB/s (two copies
         * through a 1 MiB ring), reduction as above. Measured with {@code HCOMM_TRANSPORT=shm ./hcomm perf p2p}
         * (8 B ping-pong 0.7-1.35 µs one-way; 8-64 MiB stream 10.7-16.7 GB/s; TCP in the same sitting 6.3 µs and
         * 4.6 GB/s), see docs/performance.md.
         */
        public static final LinkCost SHM = new LinkCost(1.5e-6, 1 / 10.0e9, 1 / 5.0e9);
    }

    /**
     * How a communicator's ranks sit on hosts, as far as the cost model cares.
     *
     * @param ranks    number of ranks
     * @param hosts    number of hosts they are on
     * @param minLocal fewest ranks on one host
     * @param maxLocal most ranks on one host
     */
    public record Shape(int ranks, int hosts, int minLocal, int maxLocal) {
        /** {@code n} ranks on one host. */
        public static Shape oneHost(int n) {
            return new Shape(n, 1, n, n);
        }

        /** The shape of {@code t}. */
        public static Shape of(Topology t) {
            return new Shape(t.size(), t.hosts(), t.minLocalSize(), t.maxLocalSize());
        }

        /** Whether a hierarchy has two levels here: more than one host, and more than one rank on some host. */
        public boolean multiLevel() {
            return hosts > 1 && hosts < ranks;
        }
    }

    /**
     * The flat algorithms that run the levels of a {@link Algo#HIERARCHICAL} op on one host (null where the op has no
     * such level). allReduce: {@code intraBefore} reduce-scatter within the host (RING, HALVING_DOUBLING, or TREE: a
     * reduce to the leader when the smallest host has one rank), {@code inter} all-reduce between hosts (RING,
     * RECURSIVE_DOUBLING, HALVING_DOUBLING), {@code intraAfter} all-gather (RING) or broadcast (TREE, CHAIN) within
     * the host. reduceScatter: the same first level, {@code inter} reduce-scatter (RING, HALVING_DOUBLING),
     * {@code intraAfter} PAIRWISE (blocks handed to the ranks that did not take part between hosts). allGather:
     * TREE (gather to the leader), RING or BRUCK between leaders, TREE or CHAIN (broadcast within the host).
     * broadcast: none, TREE or CHAIN between hosts, TREE or CHAIN within.
     */
    public record Levels(Algo intraBefore, Algo inter, Algo intraAfter) {
    }

    /** Seconds per byte of a local copy (rotating and packing blocks): ~10 GB/s. */
    private static final double COPY = 1 / 10e9;

    /** Between hosts, and for flat algorithms. */
    // volatile: init may replace them with measured ones (HCOMM_TUNE_AT_INIT), before any op of the user's
    private volatile LinkCost cost;
    /** Within a host (the levels of a hierarchical op that stay on one host). */
    private volatile LinkCost local;
    private final Map<Op, Algo> forced;
    /** A measured table ({@code HCOMM_TUNING_FILE}), or null: the model alone. */
    private final TuningTable table;
    private final String withinTransport;
    private final String betweenTransport;
    /** The table's entry per communicator shape (absent: none matches), looked up once per shape. */
    private final java.util.concurrent.ConcurrentHashMap<Shape, java.util.Optional<TuningTable.Entry>> entries =
            new java.util.concurrent.ConcurrentHashMap<>();
    /** The measured speed of the link between hosts, GB/s, that table entries must match; 0: not measured, not compared. */
    private volatile double linkGbps;
    /**
     * Algorithms {@code hcomm tune} forces while it measures, in every Tuner of this JVM (a rank of a tuning job runs one
     * session): copy-on-write, read once per choice.
     */
    private static volatile Map<Op, Algo> tuning = Map.of();

    /** One link type everywhere. @param forced the parsed {@code HCOMM_ALGO} (op → algorithm), possibly empty */
    public Tuner(LinkCost cost, Map<Op, Algo> forced) {
        this(cost, cost, forced);
    }

    /**
     * With a measured table: a communicator whose shape and transports match one of its entries takes that entry's
     * choices (after {@code forced}); the others the model's, over {@code between} and {@code within} (the caller
     * passes the table's measured links for the world where it has them).
     *
     * @param withinTransport {@code shm} or {@code tcp}: what links ranks of one host
     * @param betweenTransport {@code tcp}
     */
    public Tuner(LinkCost between, LinkCost within, Map<Op, Algo> forced, TuningTable table, String withinTransport,
                 String betweenTransport) {
        this.cost = between;
        this.local = within;
        this.forced = Map.copyOf(forced);
        this.table = table;
        this.withinTransport = withinTransport;
        this.betweenTransport = betweenTransport;
    }

    /**
     * For {@code hcomm tune}: every Tuner of this JVM runs {@code algo} for {@code op} ({@code null}: chooses again).
     * All ranks must switch between the same two calls (the tool switches between barriers).
     */
    public static synchronized void forceForTuning(Op op, Algo algo) {
        Map<Op, Algo> m = new EnumMap<>(Op.class);
        m.putAll(tuning);
        if (algo == null) m.remove(op);
        else m.put(op, algo);
        tuning = Map.copyOf(m);
    }

    /**
     * Costs the model from now on with measured links (null: keeps that one). Every rank must call it with the same
     * figures between the same two ops: init does, with figures broadcast from one rank.
     */
    public void useLinks(LinkCost between, LinkCost within) {
        if (between != null) this.cost = between;
        if (within != null) this.local = within;
    }

    /** The link cost between hosts (and of flat algorithms) the model uses now. */
    public LinkCost between() {
        return cost;
    }

    /** The link cost within a host the model uses now. */
    public LinkCost within() {
        return local;
    }

    /** The table's entry for communicators placed as {@code shape}, or null. */
    public TuningTable.Entry entry(Shape shape) {
        if (table == null) return null;
        return entries.computeIfAbsent(shape, s -> java.util.Optional.ofNullable(
                table.find(TuningTable.Signature.of(s, withinTransport, betweenTransport), linkGbps))).orElse(null);
    }

    /**
     * The link between hosts measured at {@code gbps} (GB/s): from now on a table entry applies only if it was tuned at a
     * speed within {@link TuningTable#SPEED_TOLERANCE} of it (the nearest if several). Same contract as {@link #useLinks}.
     */
    public void useLinkSpeed(double gbps) {
        this.linkGbps = gbps;
        entries.clear();
    }

    /**
     * @param between links between hosts (also what flat algorithms are costed with)
     * @param within  links within a host
     * @param forced  the parsed {@code HCOMM_ALGO} (op → algorithm), possibly empty
     */
    public Tuner(LinkCost between, LinkCost within, Map<Op, Algo> forced) {
        this(between, within, forced, null, "shm", "tcp");
    }

    /**
     * Parses {@code HCOMM_ALGO}: {@code op=algo} pairs separated by {@code ;} or {@code ,}, case-insensitive,
     * {@code -} or {@code _} alike ({@code rd} is short for recursive_doubling; {@code hd} and {@code rabenseifner}
     * for halving_doubling; {@code hier} for hierarchical).
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
            Op op = op(kv[0]);
            String a = norm(kv[1]);
            if (a.equals("RD")) a = "RECURSIVE_DOUBLING";
            if (a.equals("HD") || a.equals("RABENSEIFNER")) a = "HALVING_DOUBLING";
            if (a.equals("BINOMIAL") || a.equals("BINOMIAL_TREE")) a = "TREE";
            if (a.equals("HIER") || a.equals("HIERARCHY") || a.equals("TWO_LEVEL")) a = "HIERARCHICAL";
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

    /**
     * The op named {@code name} as HCOMM_ALGO names them (case-insensitive, {@code -} or {@code _} anywhere:
     * {@code allreduce}, {@code reduce_scatter} ...).
     *
     * @throws IllegalArgumentException naming it and listing the valid choices
     */
    public static Op op(String name) {
        try {
            return Op.valueOf(norm(name).replace("_", ""));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown op '" + name.trim() + "'; " + choices(), e);
        }
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

    /** The forced algorithm of {@code op}, if HCOMM_ALGO names one (or {@code hcomm tune} forces one while it measures). */
    public Algo forced(Op op) {
        Algo f = forced.get(op);
        return f != null ? f : tuning.get(op);
    }

    /** The algorithm for {@code op} on {@code bytes} (the whole vector) over {@code n} ranks of one host. */
    public Algo choose(Op op, long bytes, int n) {
        return choose(op, bytes, Shape.oneHost(n));
    }

    /**
     * The algorithm for {@code op} on {@code bytes} (the whole vector) over ranks placed as {@code shape}: the forced
     * one, else the cheapest; {@link Algo#HIERARCHICAL} only when {@link Shape#multiLevel()}. Ties go to the first in
     * {@link #SERVES}.
     */
    public Algo choose(Op op, long bytes, Shape shape) {
        Algo f = forced.get(op);
        if (f != null) return f;
        f = tuning.get(op);
        if (f != null) return f;
        List<Algo> candidates = SERVES.get(op);
        if (candidates.size() == 1) return candidates.get(0);
        if (table != null) {
            TuningTable.Entry e = entry(shape);
            Algo measured = e == null ? null : e.choice(op, bytes);
            if (measured != null && (measured != Algo.HIERARCHICAL || shape.multiLevel())) return measured;
        }
        Algo best = null;
        double bestCost = Double.MAX_VALUE;
        for (Algo a : candidates) {
            if (a == Algo.HIERARCHICAL && !shape.multiLevel()) continue;
            double c = cost(op, a, bytes, shape);
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
     * The flat algorithms for the levels of a {@link Algo#HIERARCHICAL} {@code op} of {@code bytes} over ranks placed
     * as {@code shape}, on a host with {@code localSize} of them: the cheapest for each level (never forced). Every rank
     * of one host gets the same answer; hosts of different sizes may choose differently within themselves.
     */
    public Levels levels(Op op, long bytes, Shape shape, int localSize) {
        return new Levels(pick(op, 0, bytes, shape, localSize).algo, pick(op, 1, bytes, shape, localSize).algo,
                pick(op, 2, bytes, shape, localSize).algo);
    }

    /** An algorithm for one level and its modelled seconds. */
    private record Choice(Algo algo, double seconds) {
    }

    private static final Choice NONE = new Choice(null, 0);

    /** The cheapest of {@code options} by {@code f}; ties to the first. */
    private static Choice cheapest(List<Algo> options, java.util.function.ToDoubleFunction<Algo> f) {
        Choice best = null;
        for (Algo a : options) {
            double c = f.applyAsDouble(a);
            if (best == null || c < best.seconds * (1 - 1e-9)) best = new Choice(a, c);
        }
        return best;
    }

    /**
     * Level {@code level} (0: within the host before, 1: between hosts, 2: within the host after) of a hierarchical
     * {@code op}: the algorithms that can run it, each costed over the level's group; a group of one rank costs nothing.
     * m is the whole vector, C the fewest ranks of a host: the number of channels (groups between hosts, one per local
     * rank below C), each carrying m/C.
     */
    private Choice pick(Op op, int level, double m, Shape s, int l) {
        int h = s.hosts();
        int c = Math.max(1, s.minLocal());
        double blk = s.ranks() == 0 ? 0 : m / s.ranks();
        return switch (op) {
            case ALLREDUCE -> switch (level) {
                case 0 -> intraReduceScatter(m, l, c);
                case 1 -> h == 1 ? NONE : cheapest(List.of(Algo.RING, Algo.RECURSIVE_DOUBLING, Algo.HALVING_DOUBLING),
                        a -> flat(Op.ALLREDUCE, a, m / c, h, cost));
                default -> l == 1 ? NONE : c == 1
                        ? cheapest(List.of(Algo.TREE, Algo.CHAIN), a -> flat(Op.BROADCAST, a, m, l, local))
                        : new Choice(Algo.RING, flat(Op.ALLGATHER, Algo.RING, m * l / c, l, local));
            };
            case REDUCESCATTER -> switch (level) {
                // the blocks are first put in channel order: one copy of the vector
                case 0 -> {
                    Choice x = intraReduceScatter(m, l, c);
                    yield new Choice(x.algo, x.seconds + m * COPY);
                }
                case 1 -> h == 1 ? NONE : cheapest(List.of(Algo.RING, Algo.HALVING_DOUBLING),
                        a -> flat(Op.REDUCESCATTER, a, m / c, h, cost));
                // a channel rank hands the other blocks it owns to their ranks, one message each
                default -> new Choice(Algo.PAIRWISE, ((l + c - 1) / c - 1) * (local.alpha() + blk * local.beta()));
            };
            case ALLGATHER -> switch (level) {
                case 0 -> new Choice(Algo.TREE, l == 1 ? 0 : lg(l) * local.alpha() + (l - 1) * blk * local.beta());
                case 1 -> {
                    if (h == 1) yield NONE;
                    List<Algo> options = s.minLocal() == s.maxLocal() ? List.of(Algo.RING, Algo.BRUCK) : List.of(Algo.RING);
                    // the leaders pass whole hosts' blocks: the largest host sets the ring's step
                    yield cheapest(options, a -> a == Algo.RING ? (h - 1) * (cost.alpha() + s.maxLocal() * blk * cost.beta())
                            : flat(Op.ALLGATHER, Algo.BRUCK, m, h, cost));
                }
                // every block, broadcast within the host
                default -> l == 1 ? NONE : cheapest(List.of(Algo.TREE, Algo.CHAIN), a -> flat(Op.BROADCAST, a, m, l, local));
            };
            case BROADCAST -> switch (level) {
                case 0 -> NONE;
                case 1 -> h == 1 ? NONE : cheapest(List.of(Algo.TREE, Algo.CHAIN), a -> flat(Op.BROADCAST, a, m, h, cost));
                default -> l == 1 ? NONE : cheapest(List.of(Algo.TREE, Algo.CHAIN), a -> flat(Op.BROADCAST, a, m, l, local));
            };
            default -> NONE;
        };
    }

    /**
     * The first level of a hierarchical all-reduce or reduce-scatter: {@code m} bytes reduced within a host of
     * {@code l} ranks so that local ranks 0..c−1 each own one of c blocks of m/c. A ring with empty blocks for the other
     * ranks; halving-doubling when every rank owns a block; a binomial reduce to the leader when c = 1.
     */
    private Choice intraReduceScatter(double m, int l, int c) {
        if (l == 1) return NONE;
        Choice ring = new Choice(Algo.RING, flat(Op.REDUCESCATTER, Algo.RING, m * l / c, l, local));
        if (c == l) return cheapest(List.of(Algo.RING, Algo.HALVING_DOUBLING), a -> flat(Op.REDUCESCATTER, a, m, l, local));
        if (c == 1) {
            double tree = lg(l) * (local.alpha() + m * (local.beta() + local.gamma()));
            if (tree < ring.seconds) return new Choice(Algo.TREE, tree);
        }
        return ring;
    }

    private static int lg(int n) {
        return n <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(n - 1);
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

    /** Modelled seconds of {@code algo} for {@code op} on {@code n} ranks of one host. Public for tests and `hcomm perf`. */
    public double cost(Op op, Algo algo, long bytes, int n) {
        return cost(op, algo, bytes, Shape.oneHost(n));
    }

    /**
     * Modelled seconds of {@code algo} for {@code op} over ranks placed as {@code shape}: a flat algorithm over the link
     * between hosts; {@link Algo#HIERARCHICAL} as the sum of its levels on the largest host (which the others wait for).
     */
    public double cost(Op op, Algo algo, long bytes, Shape shape) {
        if (algo != Algo.HIERARCHICAL) return flat(op, algo, bytes, shape.ranks(), cost);
        double sum = 0;
        for (int level = 0; level < 3; level++) sum += pick(op, level, bytes, shape, shape.maxLocal()).seconds;
        return sum;
    }

    /** Seconds of flat {@code algo} for {@code op} on {@code bytes} over {@code n} ranks joined by links {@code link}. */
    private static double flat(Op op, Algo algo, double bytes, int n, LinkCost link) {
        if (n <= 1) return 0;
        double a = link.alpha();
        double b = link.beta();
        double g = link.gamma();
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
            case HIERARCHICAL -> throw new IllegalArgumentException("not a flat algorithm");
        };
    }
}
