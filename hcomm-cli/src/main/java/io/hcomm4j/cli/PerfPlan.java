package io.hcomm4j.cli;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.cli.CollectiveBench.Coll;
import java.util.ArrayList;
import java.util.List;

/** What {@code hcomm perf} measures: the sizes of a sweep, and each size's iterations and warm-up (p2p, collectives). */
final class PerfPlan {
    private PerfPlan() {
    }

    /** {@code --algo} of p2p: null (both), pingpong or stream. */
    static PerfCommand.P2pAlgo p2pAlgo(String algo) {
        if (algo == null) return null;
        for (PerfCommand.P2pAlgo a : PerfCommand.P2pAlgo.values()) {
            if (a.name().equalsIgnoreCase(algo)) return a;
        }
        throw new IllegalArgumentException("p2p --algo must be pingpong or stream, not '" + algo + "'");
    }

    /**
     * Sizes from {@code min} to {@code max} (inclusive), each {@code factor} times the one before; one bound
     * alone is one size.
     */
    static List<Long> sweep(Long minBytes, Long maxBytes, int factor) {
        long min = minBytes != null ? minBytes : maxBytes;
        long max = maxBytes != null ? maxBytes : minBytes;
        if (min < 1) throw new IllegalArgumentException("-b must be at least 1 byte, was " + min);
        if (max < min) throw new IllegalArgumentException("-e (" + max + ") is smaller than -b (" + min + ")");
        if (factor < 2 && max > min) throw new IllegalArgumentException("-f must be >= 2, was " + factor);
        List<Long> sizes = new ArrayList<>();
        for (long b = min; b <= max; b = b > Long.MAX_VALUE / factor ? Long.MAX_VALUE : b * factor) {
            sizes.add(b);
            if (b == Long.MAX_VALUE || max == min) break;
        }
        return sizes;
    }

    static void checkIterations(Integer iters, Integer warmup) {
        if (iters != null && iters < 1) throw new IllegalArgumentException("--iters must be >= 1, was " + iters);
        if (warmup != null && warmup < 0) throw new IllegalArgumentException("-w/--warmup-iters must be >= 0, was " + warmup);
    }

    /**
     * What p2p measures. Without {@code -b}/{@code -e}: pingpong at 8 B and 4 KiB, stream at 4 MiB and
     * 64 MiB (or those of {@code algo}). With them: every size from min to max, times {@code factor}, with
     * each algo (or {@code algo}). Iterations not given are chosen by size so each size takes about a second.
     */
    static List<PerfCommand.P2pTest> p2pPlan(Long minBytes, Long maxBytes, int factor, PerfCommand.P2pAlgo algo, Integer iters, Integer warmup) {
        checkIterations(iters, warmup);
        List<PerfCommand.P2pTest> plan = new ArrayList<>();
        if (minBytes == null && maxBytes == null) {
            for (long b : new long[] {8, 4 << 10}) {
                if (algo == null || algo == PerfCommand.P2pAlgo.PINGPONG) plan.add(test(PerfCommand.P2pAlgo.PINGPONG, b, iters, warmup));
            }
            for (long b : new long[] {4 << 20, 64 << 20}) {
                if (algo == null || algo == PerfCommand.P2pAlgo.STREAM) plan.add(test(PerfCommand.P2pAlgo.STREAM, b, iters, warmup));
            }
            return plan;
        }
        for (long b : sweep(minBytes, maxBytes, factor)) {
            for (PerfCommand.P2pAlgo a : PerfCommand.P2pAlgo.values()) {
                if (algo == null || algo == a) plan.add(test(a, b, iters, warmup));
            }
        }
        return plan;
    }

    /**
     * What a collective measures: without {@code -b}/{@code -e} 4 KiB to 64 MiB times {@code factor} (default 4),
     * otherwise the sweep from min to max (factor default 2). Iterations not given: 4 GiB / size within 20..1000
     * (large sizes get their first calls after a size change slower for a while: 16 calls of 64 MiB on 4 ranks gave half
     * the busbw of 30); warmup: iterations / 5 within 1..200 (so {@code --iters 20} gets 4, nccl-tests' order).
     */
    static List<CollectiveBench.Test> collectivePlan(Coll coll, Long minBytes, Long maxBytes, Integer factor,
                                                     DataType type, ReduceOp op, int root, Integer iters, Integer warmup) {
        checkIterations(iters, warmup);
        List<Long> sizes = minBytes == null && maxBytes == null
                ? sweep(PerfCommand.DEFAULT_MIN, PerfCommand.DEFAULT_MAX, factor != null ? factor : PerfCommand.DEFAULT_FACTOR)
                : sweep(minBytes, maxBytes, factor != null ? factor : 2);
        List<CollectiveBench.Test> plan = new ArrayList<>();
        for (long b : sizes) {
            int n = iters != null ? iters : (int) clamp((4L << 30) / b, 20, 1000);
            int w = warmup != null ? warmup : (int) clamp(n / 5, 1, 200);
            plan.add(new CollectiveBench.Test(coll, b, type, op, root, n, w));
        }
        return plan;
    }

    private static PerfCommand.P2pTest test(PerfCommand.P2pAlgo algo, long bytes, Integer iters, Integer warmup) {
        if (algo == PerfCommand.P2pAlgo.PINGPONG) {
            int n = iters != null ? iters : (int) clamp((256L << 20) / bytes, 20, 10_000);
            int w = warmup != null ? warmup : (int) clamp(n / 10, 2, 1_000);
            return new PerfCommand.P2pTest(algo, bytes, n, w, 1);
        }
        if (bytes < SMALL_STREAM) {
            // small messages: a window as OSU's, and enough windows for the JIT to compile the path first (two warmup
            // windows of 16 left 8 B at 70 µs per message, interpreted; 0.3 µs once compiled)
            // (with --iters the user's count rules: a quarter of it, as short as the run they asked for)
            int n = iters != null ? iters : (int) clamp((256L << 20) / (bytes * SMALL_WINDOW), 100, 2_000);
            int w = warmup != null ? warmup : iters != null ? (int) clamp(n / 4, 1, 500) : (int) clamp(n / 4, 100, 500);
            return new PerfCommand.P2pTest(algo, bytes, n, w, SMALL_WINDOW);
        }
        int window = (int) clamp((256L << 20) / bytes, 1, 16);
        int n = iters != null ? iters : (int) clamp((1L << 30) / (bytes * window), 5, 100);
        int w = warmup != null ? warmup : bytes * window >= (256L << 20) ? 1 : 2;
        return new PerfCommand.P2pTest(algo, bytes, n, w, window);
    }

    /** Streams of messages below this size go in windows of {@link #SMALL_WINDOW}. */
    static final long SMALL_STREAM = 64 << 10;
    static final int SMALL_WINDOW = 64;

    private static long clamp(long v, long lo, long hi) {
        return Math.max(lo, Math.min(hi, v));
    }
}
