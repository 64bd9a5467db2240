package io.hcomm4j.comm;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.algo.Tuner;
import java.util.Arrays;

/**
 * The collectives, one constant each: the name reports and metrics use, the tuner op whose {@code HCOMM_ALGO} entry
 * governs it, and its code in the top 5 bits of a fingerprint (the ordinal + 1: code 0 is "no collective"). The
 * declaration order is therefore wire format (peers decode each other's fingerprints) and the metrics' order.
 */
enum CollectiveOp {
    // one constant per collective (a list of like lines by nature)
    ALL_REDUCE("allReduce", Tuner.Op.ALLREDUCE),
    REDUCE("reduce", Tuner.Op.REDUCE),
    REDUCE_SCATTER("reduceScatter", Tuner.Op.REDUCESCATTER),
    REDUCE_SCATTER_V("reduceScatterV", Tuner.Op.REDUCESCATTER),
    BROADCAST("broadcast", Tuner.Op.BROADCAST),
    ALL_GATHER("allGather", Tuner.Op.ALLGATHER),
    ALL_GATHER_V("allGatherV", Tuner.Op.ALLGATHER),
    GATHER("gather", Tuner.Op.GATHER),
    GATHER_V("gatherV", Tuner.Op.GATHER),
    SCATTER("scatter", Tuner.Op.SCATTER),
    SCATTER_V("scatterV", Tuner.Op.SCATTER),
    ALL_TO_ALL("allToAll", Tuner.Op.ALLTOALL),
    ALL_TO_ALL_V("allToAllV", Tuner.Op.ALLTOALL),
    BARRIER("barrier", Tuner.Op.BARRIER),
    // prefix reductions have one algorithm (a pipelined chain); REDUCE's HCOMM_ALGO entry is the nearest kin
    SCAN("scan", Tuner.Op.REDUCE),
    EXSCAN("exscan", Tuner.Op.REDUCE);

    /** values() copies its array on every call; decoding a fingerprint should not. */
    private static final CollectiveOp[] BY_ORDINAL = values();
    private static final int CODE_SHIFT = 27;
    private static final int HASH_MASK = (1 << CODE_SHIFT) - 1;

    private final String label;
    private final Tuner.Op tunerOp;

    CollectiveOp(String label, Tuner.Op tunerOp) {
        this.label = label;
        this.tunerOp = tunerOp;
    }

    /** The name the API, reports, metrics and JFR events use: "allReduce". */
    String label() {
        return label;
    }

    /** The tuner's op: which {@code HCOMM_ALGO} entry forces this collective's algorithm. */
    Tuner.Op tunerOp() {
        return tunerOp;
    }

    /**
     * What every message of a collective carries, so that a receiver notices a peer in another collective or the
     * same one with other arguments: the op's code in the top 5 bits, a hash of count, type, reduce op and root below.
     */
    int fingerprint(long count, DataType type, ReduceOp redop, int root) {
        return fingerprint(count, type, redop == null ? 0 : redopCode(redop), root);
    }

    /** The reduction's part of a fingerprint for a built-in op (0 is "no reduction"). */
    static int redopCode(ReduceOp op) {
        return op.ordinal() + 1;
    }

    /** As {@link #fingerprint(long, DataType, ReduceOp, int)}, the reduction given by its {@link #redopCode}. */
    int fingerprint(long count, DataType type, int redopCode, int root) {
        long h = count * 0x9E3779B97F4A7C15L;
        h += (type == null ? 0 : type.ordinal() + 1) * 0xC2B2AE3D27D4EB4FL;
        h += redopCode * 0x165667B19E3779F9L;
        h += (root + 2L) * 0xD6E8FEB86659FD93L;
        h ^= h >>> 32;
        return ((ordinal() + 1) << CODE_SHIFT) | (int) (h & HASH_MASK);
    }

    /** The name of a reduction code for the flight record: the built-in op's, {@code function}, or null for none. */
    static String redopName(int code) {
        if (code == 0) return null;
        ReduceOp[] ops = REDUCE_OPS;
        return code > 0 && code <= ops.length ? ops[code - 1].name() : "function";
    }

    private static final ReduceOp[] REDUCE_OPS = ReduceOp.values();

    /** Set in every user function's reduction code: none equals a built-in op's (ordinal + 1). */
    private static final int USER_FUNCTION = 1 << 30;

    /**
     * The reduction's part of a fingerprint for a user function: its name's hash (the same in every JVM) under a bit no
     * built-in op has, so ranks that pass differently named functions, or a function where others pass an op, differ.
     * Unnamed functions are all alike.
     */
    static int redopCode(io.hcomm4j.ReduceFunction function) {
        String name = function.name();
        return USER_FUNCTION | (name == null ? 0 : name.hashCode() & (USER_FUNCTION - 1));
    }

    /** The code of a fingerprint that says "this rank refused its own arguments to the op in its low bits". */
    private static final int REFUSED_CODE = 31;

    /**
     * The fingerprint a rank publishes in the turn of a collective it refused (a bad argument of its own): it matches
     * nobody's, so every other rank's op fails instead of waiting, and {@link #refusedOp} names the op.
     */
    int refusedFingerprint() {
        return (REFUSED_CODE << CODE_SHIFT) | ordinal();
    }

    /** The op a {@link #refusedFingerprint} names, or null if {@code fingerprint} is not one. */
    static String refusedOp(int fingerprint) {
        if (fingerprint >>> CODE_SHIFT != REFUSED_CODE) return null;
        int op = fingerprint & HASH_MASK;
        return op < BY_ORDINAL.length ? BY_ORDINAL[op].label : "a collective";
    }

    /**
     * The label of the collective a peer's fingerprint names: "" for code 0 (not a collective), the last op for codes
     * past the last (a newer peer), so a report always names something.
     */
    static String labelOf(int fingerprint) {
        int code = fingerprint >>> CODE_SHIFT;
        return code == 0 ? "" : BY_ORDINAL[Math.min(BY_ORDINAL.length, code) - 1].label;
    }

    /** Whether the fingerprint's count is a hash of per-rank counts (the V forms, reduceScatter), not a count. */
    private boolean hashesCounts() {
        return this == REDUCE_SCATTER || this == REDUCE_SCATTER_V || this == ALL_GATHER_V;
    }

    /** What the fingerprint's count is, for a message: "count", "bytes per rank" (allToAll), "per-rank counts". */
    private String countName() {
        return this == ALL_TO_ALL ? "bytes per rank" : hashesCounts() ? "per-rank counts" : "count";
    }

    /**
     * Which one argument of a call with fingerprint {@code other} differs from this call's ({@code count}, {@code type},
     * {@code redop}, {@code root}: the fingerprint's inputs here), as "count 1000" or "root 2" (its value there), found
     * by trying each argument's likely values; "" for the per-rank counts of a V form (only their hash travels), null if
     * no single argument explains it. With a 27-bit hash and about 4,300 tries, a wrong answer is a 1-in-30,000 chance.
     */
    String differingArgument(int other, long count, DataType type, int redop, int root, int size) {
        if (other >>> CODE_SHIFT != ordinal() + 1) return null;
        for (int r = -1; r < size; r++) if (r != root && fingerprint(count, type, redop, r) == other) return "root " + r;
        if (type != null) {
            for (DataType t : DataType.values()) if (t != type && fingerprint(count, t, redop, root) == other) return "type " + t;
        }
        if (redop != 0) {
            for (ReduceOp o : ReduceOp.values()) {
                int code = redopCode(o);
                if (code != redop && fingerprint(count, type, code, root) == other) return "op " + o;
            }
        }
        if (hashesCounts()) return "";
        for (long c : countGuesses(count)) if (c != count && fingerprint(c, type, redop, root) == other) return countName() + " " + c;
        return null;
    }

    /** Counts a caller likely passed instead of {@code count}: near it, powers of two times it, and small ones. */
    private static long[] countGuesses(long count) {
        long[] out = new long[64 * 2 + 2 * 40 + 4097];
        int n = 0;
        for (long d = -64; d <= 64; d++) if (count + d >= 0) out[n++] = count + d;
        for (int k = 1; k <= 40; k++) {
            if (count << k > 0 && (count << k) >>> k == count) out[n++] = count << k;
            if (count >>> k > 0) out[n++] = count >>> k;
        }
        for (long c = 0; c <= 4096; c++) out[n++] = c;
        return java.util.Arrays.copyOf(out, n);
    }

    /** Words for the value a call has, matching {@link #differingArgument}'s: "count 1024". */
    String argumentValue(String differing, long count, DataType type, int redop, int root) {
        if (differing.startsWith("root ")) return "root " + root;
        if (differing.startsWith("type ")) return "type " + type;
        if (differing.startsWith("op ")) {
            for (ReduceOp o : ReduceOp.values()) if (redopCode(o) == redop) return "op " + o;
            return "a reduce function";
        }
        return countName() + " " + count;
    }

    /**
     * The verdict of a mismatch among every rank's fingerprint ({@code fingerprints[r]}, not all equal): it names the
     * rank that differs from the majority (ties: from rank 0), and one it differs from, so every rank names the same.
     */
    static String describeMismatch(int[] fingerprints) {
        int[] oddRef = oddAndReference(fingerprints);
        return describeMismatch(oddRef[0], fingerprints[oddRef[0]], oddRef[1], fingerprints[oddRef[1]]);
    }

    /** The rank {@link #describeMismatch(int[])} names as differing, and the one it differs from: {odd, reference}. */
    static int[] oddAndReference(int[] fingerprints) {
        int n = fingerprints.length;
        // the first rank in a minority, if some fingerprint has a strict majority; else the first that differs from rank 0's
        boolean majority = false;
        for (int m = 0; m < n && !majority; m++) majority = agreeing(fingerprints, fingerprints[m]) * 2 > n;
        int odd = -1;
        for (int p = 0; p < n && odd < 0; p++) {
            if (majority ? agreeing(fingerprints, fingerprints[p]) * 2 <= n : p > 0 && fingerprints[p] != fingerprints[0]) odd = p;
        }
        if (odd < 0) throw new IllegalArgumentException("no mismatch among fingerprints " + Arrays.toString(fingerprints));
        int ref = 0;
        while (fingerprints[ref] == fingerprints[odd]) ref++;
        return new int[] {odd, ref};
    }

    private static int agreeing(int[] fingerprints, int fingerprint) {
        int c = 0;
        for (int f : fingerprints) if (f == fingerprint) c++;
        return c;
    }

    /**
     * The verdict of a mismatch between the fingerprints {@code odd} (of rank {@code oddRank}) and {@code other} (of
     * rank {@code otherRank}): "rank 2 called broadcast where rank 0 called allReduce" or the same op with other arguments.
     */
    static String describeMismatch(int oddRank, int odd, int otherRank, int other) {
        String refused = refusedOp(odd);
        if (refused != null) return "rank " + oddRank + " refused its own arguments to " + refused + " (its exception says which)";
        String theirs = labelOf(odd);
        String others = labelOf(other);
        return "rank " + oddRank + " called " + theirs + (theirs.equals(others)
                ? " with a different count, type, op or root than rank " + otherRank
                : " where rank " + otherRank + " called " + others);
    }
}
