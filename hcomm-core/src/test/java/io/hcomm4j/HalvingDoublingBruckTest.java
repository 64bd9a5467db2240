package io.hcomm4j;

import static io.hcomm4j.ReductionCollectivesTest.bits;
import static io.hcomm4j.ReductionCollectivesTest.check;
import static io.hcomm4j.ReductionCollectivesTest.input;
import static io.hcomm4j.ReductionCollectivesTest.put;
import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The recursive halving-doubling (Rabenseifner) all-reduce and reduce-scatter(V) and the Bruck all-to-all,
 * forced through HCOMM_ALGO, on 1..8 ranks (threads over real sockets, one job per rank count): every DataType with every ReduceOp at
 * every count of {@link #COUNTS} (0, 1, counts below the rank count, primes), in place and not, each element on each
 * rank against the exact reference of {@link ReductionCollectivesTest}. The whole type x op x count grid runs at 3 ranks
 * (a fold before the halving) and 4 (a power of two above 2); at the other rank counts a diagonal of it, one cell in
 * {@link #STRIDE}, which still gives every count (in place and not) and every type-op pair at every rank count
 * ({@link #theDiagonalReachesEveryCountAndPairAtEveryRankCount}): what the algorithms do depends on the rank count, the
 * block boundaries and the in-place choice, while the type and op only pick the kernel. With inexact floating-point
 * inputs where the reduction order changes the bits (every float type and SUM, AVG, PROD at 1009 elements and at 1 or 7),
 * the same bits on every rank and in every run. Bruck: every count and 30,000, in place and not, every block byte checked
 * on every rank and the send buffer unchanged, the element type (block bytes) rotating over four.
 */
class HalvingDoublingBruckTest {
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);
    static final String FORCED = "allreduce=halving_doubling;reducescatter=hd;alltoall=bruck";
    static final long[] COUNTS = {0, 1, 2, 3, 5, 7, 13, 97, 1009};
    /** Away from 3 and 4 ranks, one grid cell in STRIDE runs (a diagonal: see {@link #runs}). */
    static final int STRIDE = 4;

    /** The (type, op) pairs of the grid: every type with every collective op it takes. */
    static List<Object[]> pairs() {
        List<Object[]> pairs = new ArrayList<>();
        for (DataType t : DataType.values()) {
            for (ReduceOp op : COLLECTIVE_OPS) {
                if (op.accepts(t)) pairs.add(new Object[] {t, op}); // BAND on floats, AVG on BOOL: refused (SmallTypesCollectivesTest)
            }
        }
        return pairs;
    }

    /** Whether grid cell (pair p, count index ci) runs on n ranks: all of them at 3 and 4 ranks, one in STRIDE elsewhere. */
    static boolean runs(int n, int p, int ci) {
        return n == 3 || n == 4 || Math.floorMod(p + ci - n, STRIDE) == 0;
    }

    /** In place or not: alternating along every count (the diagonal's cells of one count are STRIDE pairs apart) and pair. */
    static boolean inPlace(int p, int ci) {
        return (p / STRIDE + ci) % 2 == 0;
    }

    /** At every rank count the cells that run take every count both in place and not, and every (type, op) pair. */
    @Test
    void theDiagonalReachesEveryCountAndPairAtEveryRankCount() {
        List<Object[]> pairs = pairs();
        for (int n = 1; n <= 8; n++) {
            Set<String> seen = new HashSet<>();
            for (int p = 0; p < pairs.size(); p++) {
                for (int ci = 0; ci < COUNTS.length; ci++) {
                    if (!runs(n, p, ci)) continue;
                    seen.add("count " + COUNTS[ci] + " in place " + inPlace(p, ci));
                    seen.add("pair " + p);
                }
            }
            for (long count : COUNTS) {
                for (boolean inPlace : new boolean[] {false, true}) assertThat(seen).as("n=%d", n).contains("count " + count + " in place " + inPlace);
            }
            for (int p = 0; p < pairs.size(); p++) assertThat(seen).as("n=%d", n).contains("pair " + p);
        }
    }

    /**
     * One job per rank count (its sessions and connections set up once) runs the three parts in turn: the exact grid,
     * the same bits of inexact floats (from 2 ranks), the Bruck all-to-all.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
    void halvingDoublingAndBruckOnEveryRankCount(int n) throws Exception {
        Ranks.runThreads(n, Duration.ofMinutes(4), cfg -> cfg.algo(FORCED), h -> {
            Communicator c = h.world();
            everyTypeOpAndCountIsExactOnEveryRank(c);
            if (n > 1) inexactFloatsGiveTheSameBitsOnEveryRankAndInEveryRun(c);
            bruckAllToAllDeliversEveryBlock(c);
        });
    }

    /** The grid's cells that {@link #runs} at this rank count: all-reduce, reduce-scatter, reduce-scatterV, every element checked. */
    static void everyTypeOpAndCountIsExactOnEveryRank(Communicator c) {
        List<Object[]> pairs = pairs();
        int n = c.size();
        int me = c.rank();
        int k = 0;
        for (int p = 0; p < pairs.size(); p++) {
            DataType t = (DataType) pairs.get(p)[0];
            ReduceOp op = (ReduceOp) pairs.get(p)[1];
            for (int ci = 0; ci < COUNTS.length; ci++) {
                long count = COUNTS[ci];
                k++; // the cell's inputs are the same whichever cells run
                if (!runs(n, p, ci)) continue;
                int es = t.byteSize();
                String what = "n=" + n + " rank " + me + " " + t + " " + op + " count " + count;
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment send = arena.allocate(Math.max(1, count * es));
                    for (long i = 0; i < count; i++) put(send, t, i, input(t, op, me, k, i));
                    MemorySegment recv = inPlace(p, ci) ? send : arena.allocate(Math.max(1, count * es));
                    c.allReduce(send, recv, count, t, op);
                    check(recv, 0, t, op, n, k, 0, count, "allReduce " + what);

                    MemorySegment all = arena.allocate(Math.max(1, count * n * es));
                    for (long i = 0; i < count * n; i++) put(all, t, i, input(t, op, me, k, i));
                    MemorySegment mine = arena.allocate(Math.max(1, count * es));
                    c.reduceScatter(all, mine, count, t, op);
                    check(mine, 0, t, op, n, k, me * count, count, "reduceScatter " + what);

                    // uneven blocks, some empty, in a different order on every count
                    long[] counts = new long[n];
                    long total = 0;
                    long from = 0;
                    for (int r = 0; r < n; r++) {
                        counts[r] = COUNTS[(ci + 3 * r) % COUNTS.length];
                        if (r < me) from += counts[r];
                        total += counts[r];
                    }
                    MemorySegment vAll = arena.allocate(Math.max(1, total * es));
                    for (long i = 0; i < total; i++) put(vAll, t, i, input(t, op, me, k, i));
                    MemorySegment vMine = arena.allocate(Math.max(1, counts[me] * es));
                    c.reduceScatterV(vAll, vMine, counts, t, op);
                    check(vMine, 0, t, op, n, k, from, counts[me], "reduceScatterV " + what + " counts " + Arrays.toString(counts));
                }
            }
        }
    }

    /** Inexact floating-point sums and products: the same bits in two runs and on every rank. */
    static void inexactFloatsGiveTheSameBitsOnEveryRankAndInEveryRun(Communicator c) {
        DataType[] types = {DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT32, DataType.FLOAT64};
        ReduceOp[] ops = {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PROD};
        int n = c.size();
        int me = c.rank();
        for (DataType t : types) {
            for (ReduceOp op : ops) {
                // 1009 (blocks of many elements) for every type and op; of the tiny counts 1 or 7, alternating, so
                // at every rank count each type and each op meets both
                long tiny = (t.ordinal() + op.ordinal() + n) % 2 == 0 ? 1 : 7;
                for (long count : new long[] {tiny, 1009}) {
                    int es = t.byteSize();
                    long bytes = count * es;
                    String what = "n=" + n + " rank " + me + " " + t + " " + op + " count " + count;
                    try (Arena arena = Arena.ofShared()) {
                        // values of mixed magnitude: sums round, so another order would give other bits
                        Random rnd = new Random(31L * me + t.ordinal() * 7L + op.ordinal() + count);
                        MemorySegment send = arena.allocate(bytes);
                        for (long i = 0; i < count; i++) {
                            double x = op == ReduceOp.PROD ? 0.5 + rnd.nextDouble() : rnd.nextGaussian() * Math.pow(10, rnd.nextInt(7) - 3);
                            put(send, t, i, x);
                        }
                        MemorySegment first = arena.allocate(bytes);
                        MemorySegment second = arena.allocate(bytes);
                        c.allReduce(send, first, count, t, op);
                        c.allReduce(send, second, count, t, op);
                        for (long i = 0; i < count; i++) {
                            if (bits(first, t, i) != bits(second, t, i)) throw new AssertionError(what + ": runs differ at " + i);
                        }
                        MemorySegment everyone = arena.allocate(bytes * n);
                        c.allGather(first, everyone, bytes, DataType.UINT8);
                        for (int r = 0; r < n; r++) {
                            long at = MemorySegment.mismatch(everyone, r * bytes, (r + 1) * bytes, first, 0, bytes);
                            if (at >= 0) throw new AssertionError(what + ": rank " + r + " differs from rank " + me + " at byte " + at);
                        }
                    }
                }
            }
        }
    }

    /** Bruck all-to-all: every block byte on every rank, and the send buffer unchanged. */
    static void bruckAllToAllDeliversEveryBlock(Communicator c) {
        int n = c.size();
        int me = c.rank();
        int k = 0;
        // the type only sets the block's bytes: every count in place and not, the type rotating so that at every
        // rank count each type comes both in place and not
        DataType[] types = {DataType.UINT8, DataType.BFLOAT16, DataType.INT32, DataType.FLOAT64};
        // and blocks as large as DataMovementCollectivesTest's random all-to-alls take
        long[] counts = LongStream.concat(Arrays.stream(COUNTS), LongStream.of(30_000)).toArray();
        for (int ci = 0; ci < counts.length; ci++) {
            long count = counts[ci];
            for (boolean inPlace : new boolean[] {false, true}) {
                DataType t = types[(ci + (inPlace ? 2 : 0) + n) % types.length];
                k++;
                long b = count * t.byteSize();
                String what = "n=" + n + " rank " + me + " " + t + " count " + count + (inPlace ? " in place" : "");
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment send = arena.allocate(Math.max(1, b * n));
                    for (int d = 0; d < n; d++) DataMovementCollectivesTest.fill(send, d * b, b, me * n + d, k);
                    MemorySegment recv = inPlace ? send : arena.allocate(Math.max(1, b * n));
                    c.allToAll(send, recv, count, t);
                    for (int s = 0; s < n; s++) DataMovementCollectivesTest.check(recv, s * b, b, s * n + me, k, what);
                    if (!inPlace) {
                        // the send buffer is only read
                        for (int d = 0; d < n; d++) {
                            for (long i = 0; i < b; i++) {
                                if (send.get(ValueLayout.JAVA_BYTE, d * b + i) != DataMovementCollectivesTest.val(me * n + d, k, i)) {
                                    throw new AssertionError(what + ": send changed in block " + d + " at " + i);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
