package io.hcomm4j;

import io.hcomm4j.testing.Memo;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Seeded random sequences of all-reduce, reduce, reduce-scatter(V) on 1..8 ranks (threads of this JVM over
 * real sockets), every DataType with every ReduceOp it takes, counts 0, 1, primes and sizes not divisible by the rank
 * count, every root. Every element on every rank is compared bit for bit with a reference computed in long
 * or double precision from all ranks' inputs (once for all the ranks of a job that check the same elements). Inputs are chosen so that every partial result is exact in the
 * type (small integers; powers of two for PROD; any bits for the bitwise ops, which are exact anyway), so the reference
 * does not depend on the reduction order; AVG divides the exact sum once as documented. BOOL inputs are 0 or assorted
 * non-zero bytes, and results must be 0 or 1.
 */
public class ReductionCollectivesTest {
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);
    static final long SEED = 77_2026L;
    static final long[] COUNTS = {0, 1, 2, 3, 13, 97, 1009, 20_011, 100_003, 300_007};

    /** A random op {@code t} takes (the same draw on every rank). */
    static ReduceOp randomOp(Random rnd, DataType t) {
        while (true) {
            ReduceOp op = COLLECTIVE_OPS[rnd.nextInt(COLLECTIVE_OPS.length)];
            if (op.accepts(t)) return op;
        }
    }

    /** Rank r's input at element i of op k, as an exact number. */
    static double input(DataType t, ReduceOp op, int r, int k, long i) {
        long h = (i * 0x9E3779B97F4A7C15L) ^ (r * 0xC2B2AE3D27D4EB4FL) ^ (k * 0x165667B19E3779F9L);
        h ^= h >>> 29;
        if (t == DataType.BOOL) {
            long[] bytes = {0, 0, 1, 2, -1, -128};
            return bytes[(int) Math.floorMod(h, bytes.length)];
        }
        if (op.bitwise()) return h >> 12; // 52 bits, exact in a double: every bit of the narrow types, most of INT64's
        if (op == ReduceOp.PROD) {
            if (t == DataType.UINT8) return (Math.floorMod(h, 4) + 1);
            double[] p = {-2, -1, 1, 2};
            return p[(int) Math.floorMod(h, 4)];
        }
        int range = switch (t) {
            case BFLOAT16 -> 15;
            case UINT8 -> 30;
            default -> 100;
        };
        long v = Math.floorMod(h, 2 * range + 1) - range;
        return t == DataType.UINT8 ? Math.abs(v) : v;
    }

    static void put(MemorySegment s, DataType t, long i, double x) {
        switch (t) {
            case INT8, UINT8, BOOL -> s.setAtIndex(ValueLayout.JAVA_BYTE, i, (byte) (long) x);
            case INT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) (long) x);
            case INT32 -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, (int) (long) x);
            case INT64 -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, (long) x);
            case FLOAT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, Float.floatToFloat16((float) x));
            case BFLOAT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) (Float.floatToRawIntBits((float) x) >>> 16));
            case FLOAT32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) x);
            case FLOAT64 -> s.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, x);
        }
    }

    /** The raw bits of element i. */
    static long bits(MemorySegment s, DataType t, long i) {
        return switch (t) {
            case INT8, UINT8, BOOL -> s.getAtIndex(ValueLayout.JAVA_BYTE, i) & 0xFF;
            case INT16 -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) & 0xFFFF;
            case INT32 -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i) & 0xFFFFFFFFL;
            case INT64 -> s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
            case FLOAT16, BFLOAT16 -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) & 0xFFFF;
            case FLOAT32 -> Float.floatToRawIntBits(s.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i)) & 0xFFFFFFFFL;
            case FLOAT64 -> Double.doubleToRawLongBits(s.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i));
        };
    }

    static short bf16(float f) {
        int b = Float.floatToRawIntBits(f);
        return (short) ((b + 0x7FFF + ((b >>> 16) & 1)) >>> 16);
    }

    /** Raw bits the reduction of element i over n ranks must have. */
    static long expected(DataType t, ReduceOp op, int n, int k, long i) {
        if (t == DataType.BOOL) {
            boolean acc = input(t, op, 0, k, i) != 0;
            for (int r = 1; r < n; r++) {
                boolean x = input(t, op, r, k, i) != 0;
                acc = switch (op) {
                    case SUM, MAX, BOR -> acc | x;
                    case PROD, MIN, BAND -> acc & x;
                    case BXOR -> acc ^ x;
                    default -> throw new AssertionError(op + " is not a BOOL op");
                };
            }
            return acc ? 1 : 0;
        }
        if (!t.isFloatingPoint()) {
            long acc = (long) input(t, op, 0, k, i);
            for (int r = 1; r < n; r++) {
                long x = (long) input(t, op, r, k, i);
                acc = switch (op) {
                    case SUM, AVG -> acc + x;
                    case PROD -> acc * x;
                    case MIN -> t == DataType.UINT8 ? Math.min(acc & 0xFF, x & 0xFF) : Math.min(acc, x);
                    case MAX -> t == DataType.UINT8 ? Math.max(acc & 0xFF, x & 0xFF) : Math.max(acc, x);
                    case BAND -> acc & x;
                    case BOR -> acc | x;
                    case BXOR -> acc ^ x;
                    case REPLACE, NO_OP -> throw new AssertionError(op + " is not a collective op");
                };
            }
            long v = switch (t) {
                case INT8 -> op == ReduceOp.AVG ? (byte) acc / n : (byte) acc;
                case UINT8 -> op == ReduceOp.AVG ? (acc & 0xFF) / n : acc;
                case INT16 -> op == ReduceOp.AVG ? (short) acc / n : (short) acc;
                case INT32 -> op == ReduceOp.AVG ? (int) acc / n : (int) acc;
                default -> op == ReduceOp.AVG ? acc / n : acc;
            };
            return switch (t) {
                case INT8, UINT8 -> v & 0xFF;
                case INT16 -> v & 0xFFFF;
                case INT32 -> v & 0xFFFFFFFFL;
                default -> v;
            };
        }
        double acc = input(t, op, 0, k, i);
        for (int r = 1; r < n; r++) {
            double x = input(t, op, r, k, i);
            acc = switch (op) {
                case SUM, AVG -> acc + x;
                case PROD -> acc * x;
                case MIN -> Math.min(acc, x);
                case MAX -> Math.max(acc, x);
                default -> throw new AssertionError(op + " is not a floating-point collective op");
            };
        }
        if (t == DataType.FLOAT64) return Double.doubleToRawLongBits(op == ReduceOp.AVG ? acc / n : acc);
        float f = op == ReduceOp.AVG ? (float) acc / (float) n : (float) acc;
        return switch (t) {
            case FLOAT16 -> Float.floatToFloat16(f) & 0xFFFF;
            case BFLOAT16 -> bf16(f) & 0xFFFF;
            default -> Float.floatToRawIntBits(f) & 0xFFFFFFFFL;
        };
    }

    /**
     * Throws unless elements {@code at..at+count} of {@code s} have the bits of reference elements {@code from..from+count}
     * of op k on n ranks. Past {@link #SHARED_MIN} elements the reference comes from {@link #reference}: the ranks of a job
     * that are threads of one JVM and check the same elements (an all-reduce) compute it once between them.
     */
    static void check(MemorySegment s, long at, DataType t, ReduceOp op, int n, int k, long from, long count, String what) {
        long[] reference = count >= SHARED_MIN ? reference(t, op, n, k, from, count) : null;
        for (long i = 0; i < count; i++) {
            long got = bits(s, t, at + i);
            long want = reference != null ? reference[(int) i] : expected(t, op, n, k, from + i);
            if (got != want) {
                throw new AssertionError(what + ": element " + (from + i) + " has bits 0x" + Long.toHexString(got) + ", expected 0x"
                        + Long.toHexString(want));
            }
        }
    }

    /** From this many elements on, {@link #check} takes its reference from {@link #reference}. */
    static final long SHARED_MIN = 4096;
    /** The references {@link #check} took from {@link #reference}, up to 4.2 million elements (8 bytes each). */
    private static final Memo<List<Object>, long[]> REFERENCES = new Memo<>(4_200_000);

    /**
     * {@link #expected} of elements {@code from..from+count}: a pure function of its arguments, so it is computed once
     * and kept for the other callers with the same arguments (the other ranks of an all-reduce, threads of this JVM, ask
     * for it at about the same time) until newer ones push it out.
     */
    static long[] reference(DataType t, ReduceOp op, int n, int k, long from, long count) {
        return REFERENCES.get(List.of(t, op, n, k, from, count), count, () -> {
            long[] want = new long[Math.toIntExact(count)];
            for (int i = 0; i < want.length; i++) want[i] = expected(t, op, n, k, from + i);
            return want;
        });
    }

    /** Every rank count with the cost model's choices, and a few with each algorithm forced (HCOMM_ALGO). */
    static Stream<Arguments> jobs() {
        Stream<Arguments> auto = Stream.of(1, 2, 3, 4, 5, 7, 8).map(n -> Arguments.of(n, ""));
        Stream<Arguments> forced = Stream.of(2, 3, 5).flatMap(n -> Stream.of(
                Arguments.of(n, "allreduce=ring;broadcast=chain;allgather=ring"),
                Arguments.of(n, "allreduce=recursive_doubling;broadcast=tree;allgather=bruck")));
        // halving-doubling folds differently for every non-power of two and Bruck's rounds depend on n: HalvingDoublingBruckTest
        // runs every count 1-8 with every type and op; here two of them in mixed sequences (CI time)
        Stream<Arguments> halvingBruck = Stream.of(3, 6).map(n -> Arguments.of(n,
                "allreduce=halving_doubling;reducescatter=halving_doubling;alltoall=bruck"));
        return Stream.concat(Stream.concat(auto, forced), halvingBruck);
    }

    @ParameterizedTest(name = "{0} ranks, HCOMM_ALGO=''{1}''")
    @MethodSource("jobs")
    void randomSequences(int n, String algo) throws Exception {
        int ops = n <= 4 ? 60 : 30;
        Ranks.runThreads(n, Duration.ofMinutes(4), cfg -> cfg.algo(algo), h -> sequence(h.world(), SEED + n + algo.hashCode(), ops));
    }

    /**
     * The pipelined ring with many chunks per block and blocks whose chunk counts differ (one block one element
     * longer than a whole number of chunks, so the left neighbour's message sequence changes length between
     * steps), in place and out of place, all-reduce and reduce-scatter, with the reduction's AVG division on the
     * last step: every element on every rank. Each of the three counts with SUM and with AVG, one of the two in place
     * and the other not (which one alternates), so every count and every op comes both in place and not; FLOAT32 and
     * INT32 alternate with the count.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 5})
    void ringWithManyChunksPerBlock(int n) throws Exception {
        long chunk = io.hcomm4j.algo.Tuner.ringChunkBytes(0) / 4; // the smallest ring chunk, in float32 elements
        long[] counts = {3 * chunk * n + 1, chunk * n - 1, 2 * chunk * n + n - 1};
        Ranks.runThreads(n, Duration.ofMinutes(4), cfg -> cfg.algo("allreduce=ring"), h -> {
            Communicator c = h.world();
            int me = c.rank();
            int k = 0;
            try (Arena arena = Arena.ofShared()) {
                for (int ci = 0; ci < counts.length; ci++) {
                    long count = counts[ci];
                    DataType t = ci % 2 == 0 ? DataType.FLOAT32 : DataType.INT32;
                    for (int oi = 0; oi < 2; oi++) {
                        ReduceOp op = oi == 0 ? ReduceOp.SUM : ReduceOp.AVG;
                        boolean inPlace = (ci + oi) % 2 == 0;
                        MemorySegment send = arena.allocate(count * 4);
                        for (long i = 0; i < count; i++) put(send, t, i, input(t, op, me, k, i));
                        MemorySegment recv = inPlace ? send : arena.allocate(count * 4);
                        c.allReduce(send, recv, count, t, op);
                        check(recv, 0, t, op, n, k, 0, count, "allReduce count " + count + " " + t + " " + op + " inPlace " + inPlace);
                        k++;
                        long[] rc = new long[n];
                        long total = 0;
                        for (int r = 0; r < n; r++) total += rc[r] = r % 2 == 0 ? count / n + (r == 0 ? 1 : 0) : (r == 1 ? 0 : chunk + 3);
                        MemorySegment rsSend = arena.allocate(Math.max(1, total * 4));
                        for (long i = 0; i < total; i++) put(rsSend, t, i, input(t, op, me, k, i));
                        MemorySegment rsRecv = arena.allocate(Math.max(1, rc[me] * 4));
                        c.reduceScatterV(rsSend, rsRecv, rc, t, op);
                        long from = 0;
                        for (int r = 0; r < me; r++) from += rc[r];
                        check(rsRecv, 0, t, op, n, k, from, rc[me], "reduceScatterV total " + total + " " + t + " " + op);
                        k++;
                    }
                }
            }
        });
    }

    /** The random sequence of ops (the same on every rank for one seed), every result checked. */
    public static void sequence(Communicator c, long seed, int ops) {
        int n = c.size();
        {
            int me = c.rank();
            Random rnd = new Random(seed);
            try (Arena arena = Arena.ofShared()) {
                // each rank on its own picks heap arrays or off-heap memory per buffer
                Random local = new Random(seed * 31 + c.rank());
                for (int k = 0; k < ops; k++) {
                    DataType t = DataType.values()[rnd.nextInt(DataType.values().length)];
                    ReduceOp op = randomOp(rnd, t);
                    long count = COUNTS[rnd.nextInt(COUNTS.length)];
                    int kind = rnd.nextInt(4);
                    int root = rnd.nextInt(n);
                    boolean async = rnd.nextBoolean();
                    boolean inPlace = rnd.nextBoolean();
                    int es = t.byteSize();
                    String what = "op " + k + " kind " + kind + " n=" + n + " rank " + me + " " + t + " " + op + " count " + count;
                    switch (kind) {
                        case 0 -> { // allReduce
                            MemorySegment send = buffer(arena, local, Math.max(1, count * es));
                            for (long i = 0; i < count; i++) put(send, t, i, input(t, op, me, k, i));
                            MemorySegment recv = inPlace ? send : buffer(arena, local, Math.max(1, count * es));
                            if (async) c.allReduceAsync(send, recv, count, t, op).await();
                            else c.allReduce(send, recv, count, t, op);
                            check(recv, 0, t, op, n, k, 0, count, what);
                        }
                        case 1 -> { // reduce
                            MemorySegment send = buffer(arena, local, Math.max(1, count * es));
                            for (long i = 0; i < count; i++) put(send, t, i, input(t, op, me, k, i));
                            MemorySegment recv = inPlace && me == root ? send : buffer(arena, local, Math.max(1, count * es));
                            if (async) c.reduceAsync(send, recv, count, t, op, root).await();
                            else c.reduce(send, recv, count, t, op, root);
                            if (me == root) check(recv, 0, t, op, n, k, 0, count, what);
                            else {
                                // a non-root's send buffer is its own and stays untouched
                                MemorySegment one = buffer(arena, local, 8);
                                for (long i = 0; i < count; i++) {
                                    put(one, t, 0, input(t, op, me, k, i));
                                    if (bits(send, t, i) != bits(one, t, 0)) throw new AssertionError(what + ": send changed at " + i);
                                }
                            }
                        }
                        case 2 -> { // reduceScatter
                            long per = Math.min(count, 30_011);
                            MemorySegment send = buffer(arena, local, Math.max(1, per * n * es));
                            for (long i = 0; i < per * n; i++) put(send, t, i, input(t, op, me, k, i));
                            MemorySegment recv = buffer(arena, local, Math.max(1, per * es));
                            if (async) c.reduceScatterAsync(send, recv, per, t, op).await();
                            else c.reduceScatter(send, recv, per, t, op);
                            check(recv, 0, t, op, n, k, me * per, per, what);
                        }
                        default -> { // reduceScatterV
                            long[] counts = new long[n];
                            long total = 0;
                            for (int r = 0; r < n; r++) {
                                counts[r] = COUNTS[rnd.nextInt(COUNTS.length - 2)];
                                total += counts[r];
                            }
                            long from = 0;
                            for (int r = 0; r < me; r++) from += counts[r];
                            MemorySegment send = buffer(arena, local, Math.max(1, total * es));
                            for (long i = 0; i < total; i++) put(send, t, i, input(t, op, me, k, i));
                            MemorySegment recv = buffer(arena, local, Math.max(1, counts[me] * es));
                            if (async) c.reduceScatterVAsync(send, recv, counts, t, op).await();
                            else c.reduceScatterV(send, recv, counts, t, op);
                            check(recv, 0, t, op, n, k, from, counts[me], what);
                        }
                    }
                }
            }
        }
    }

    /**
     * A buffer of {@code bytes}: half the time a slice of a heap {@code long[]} (what the array overloads and
     * {@code MemorySegment.ofArray} give), otherwise off-heap memory of {@code arena}.
     */
    static MemorySegment buffer(Arena arena, Random local, long bytes) {
        if (local.nextBoolean()) return MemorySegment.ofArray(new long[(int) ((bytes + 7) / 8)]).asSlice(0, bytes);
        return arena.allocate(bytes);
    }
}
