package io.hcomm4j.algo;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.algo.Tuner.Algo;
import io.hcomm4j.algo.Tuner.Op;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Online feedback on one communicator's algorithm choice. Each collective that has a choice, in each size class (a
 * power of two of its bytes), times its transport algorithm on every rank. Every {@link #VOTE_EVERY}-th op of a class,
 * at the end of that op and over its own links (so no extra sequence number is needed), the ranks all-reduce the
 * slowest rank's recent time (an exponential average over the op's calls; maximum over ranks): every rank then holds
 * the same figure and takes the same decision at the same op, so the next op of the class runs the same algorithm
 * everywhere and results stay bit-identical on every rank.
 *
 * <p>The first vote of an algorithm in a class sets its baseline. When two votes in a row find it more than
 * {@link #DEGRADE} times slower than that, it is replaced by the algorithm expected to be fastest, if that is
 * {@link #MARGIN} faster than the current time: an algorithm that ran before in this class is expected at its last
 * voted time; one that never ran at the model's ratio to the current one's baseline. If the replacement's first vote
 * is slower than the degraded time it replaced, the previous algorithm comes back. A switch is logged and committed
 * as a JFR event by the caller. Steady algorithms are never explored, so feedback costs
 * one small all-reduce every {@value #VOTE_EVERY} ops of a class and nothing else. A switch made during a slow phase
 * of the whole machine may keep an algorithm a little slower than the one it replaced, until that one degrades in
 * turn: without running both again nothing tells the two apart. Not thread-safe: the communicator runs its collectives one at
 * a time.
 */
public final class Feedback {
    /** Ops of a class between votes. */
    public static final int VOTE_EVERY = 32;
    /** How much slower than its baseline the current algorithm must become before others are considered. */
    static final double DEGRADE = 1.5;
    /** How much faster the replacement must be expected to be. */
    static final double MARGIN = 0.10;
    private static final double WEIGHT = 1.0 / 8;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Feedback.class);
    private static final ReduceKernel MAX = ReduceKernel.of(DataType.FLOAT64, ReduceOp.MAX);

    /** One size class of one op. */
    private static final class Slot {
        /** The algorithm feedback chose (null: the tuner's). */
        Algo current;
        int calls;
        /** This rank's recent time of the current algorithm, seconds (NaN: none since the last switch). */
        double recent = Double.NaN;
        /** The first voted time of the current algorithm, seconds (NaN: not voted yet). */
        double baseline = Double.NaN;
        /** Per algorithm (ordinal), the last voted time while it was current (NaN: never ran here). */
        final double[] known = new double[Algo.values().length];
        /** Votes in a row that found the current algorithm degraded. */
        int strikes;
        /** The algorithm the current one replaced (null: none). */
        Algo previous;

        Slot() {
            java.util.Arrays.fill(known, Double.NaN);
        }
    }

    private final Tuner tuner;
    private final Tuner.Shape shape;
    private final int rank;
    private final Map<Op, Slot[]> slots = new EnumMap<>(Op.class);

    /** Feedback on {@code tuner}'s choices for a communicator of {@code shape}, as its rank {@code rank} (rank 0 logs). */
    public Feedback(Tuner tuner, Tuner.Shape shape, int rank) {
        this.tuner = tuner;
        this.shape = shape;
        this.rank = rank;
        for (Map.Entry<Op, List<Algo>> e : Tuner.SERVES.entrySet()) {
            if (e.getValue().size() > 1) slots.put(e.getKey(), new Slot[64]);
        }
    }

    private Slot slot(Op op, long bytes) {
        Slot[] s = slots.get(op);
        if (s == null) return null;
        int cls = 64 - Long.numberOfLeadingZeros(Math.max(1, bytes));
        Slot x = s[cls];
        if (x == null) s[cls] = x = new Slot();
        return x;
    }

    /** The algorithm to run for {@code op} on {@code bytes}: feedback's, if it switched this class, else {@code chosen}. */
    public Algo choose(Op op, long bytes, Algo chosen) {
        if (tuner.forced(op) != null) return chosen;
        Slot s = slot(op, bytes);
        return s == null || s.current == null ? chosen : s.current;
    }

    /** Records that {@code algo} ran {@code op} on {@code bytes} in {@code nanos} here; true if the op must now vote. */
    public boolean observe(Op op, long bytes, Algo algo, long nanos) {
        if (tuner.forced(op) != null) return false;
        Slot s = slot(op, bytes);
        if (s == null) return false;
        if (s.current == null) s.current = algo;
        double t = nanos * 1e-9;
        s.recent = Double.isNaN(s.recent) ? t : s.recent + WEIGHT * (t - s.recent);
        return ++s.calls % VOTE_EVERY == 0;
    }

    /**
     * The vote of the op {@link #observe} asked for, over that op's links (every rank calls it at the same op): the
     * slowest rank's recent time, then the decision. Returns the switch made, or null.
     */
    public Switch vote(CollectiveLinks l, Op op, long bytes) {
        Slot s = slot(op, bytes);
        MemorySegment v = l.scratch(8);
        v.set(ValueLayout.JAVA_DOUBLE, 0, s.recent);
        Reductions.recursiveDoubling(l, v, 1, MAX, 0);
        return decide(op, bytes, s, v.get(ValueLayout.JAVA_DOUBLE, 0));
    }

    /** What a vote changed. */
    public record Switch(Op op, long bytes, Algo from, Algo to, double fromSeconds, double expectedSeconds) {
    }

    private Switch decide(Op op, long bytes, Slot s, double time) {
        Algo cur = s.current;
        if (Double.isNaN(s.baseline)) {
            s.baseline = time;
            s.known[cur.ordinal()] = time;
            // a replacement slower than even the degraded time of the one it replaced: that one again
            Algo prev = s.previous;
            if (prev != null && time > s.known[prev.ordinal()]) return switchTo(op, bytes, s, prev, time, s.known[prev.ordinal()]);
            return null;
        }
        s.known[cur.ordinal()] = time;
        if (!(time > s.baseline * DEGRADE)) {
            s.strikes = 0;
            return null;
        }
        // two votes in a row, so that a short slow phase of the machine (another job, a GC) does not explore
        if (++s.strikes < 2) return null;
        Algo best = null;
        double bestTime = Double.MAX_VALUE;
        double curModel = tuner.cost(op, cur, bytes, shape);
        for (Algo a : Tuner.SERVES.get(op)) {
            if (a == cur || (a == Algo.HIERARCHICAL && !shape.multiLevel())) continue;
            double expect = !Double.isNaN(s.known[a.ordinal()]) ? s.known[a.ordinal()]
                    : s.baseline * tuner.cost(op, a, bytes, shape) / Math.max(curModel, 1e-12);
            if (expect < bestTime) {
                bestTime = expect;
                best = a;
            }
        }
        if (best == null || !(bestTime * (1 + MARGIN) < time)) return null;
        return switchTo(op, bytes, s, best, time, bestTime);
    }

    private Switch switchTo(Op op, long bytes, Slot s, Algo to, double time, double expected) {
        Algo from = s.current;
        Switch sw = new Switch(op, bytes, from, to, time, expected);
        s.previous = from;
        s.current = to;
        s.baseline = Double.NaN;
        s.recent = Double.NaN;
        s.strikes = 0;
        if (rank == 0) {
            LOG.info("{} of ~{} bytes: {} took {} µs a call; switched to {} (expected {} µs)", Tuner.name(op), bytes,
                    Tuner.name(from), Math.round(time * 1e6), Tuner.name(to), Math.round(expected * 1e6));
        }
        return sw;
    }
}
