package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.comm.ZeroCopyProbe;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * INT16, BOOL and the bitwise ops on real ranks (threads of this JVM, each with its own session: sockets and shared
 * memory, or TCP only), 1, 2, 3, 5 and 8 ranks: allReduce, reduce and reduceScatter of every new (type, op) pair, at
 * odd counts on both sides of the one-step, sliced and pipelined shared-memory paths and of the transport's algorithm
 * switches (each pair at one count per job, rotating over the jobs so that every pair meets every count and every job
 * every count), in heap, native and registered memory, blocking and async, in place and not. Inputs are seeded random bits
 * (BOOL: zero or any non-zero byte); every element on every rank is compared with a reference folded sequentially over
 * the ranks' inputs here, which is exact whatever order the library combines in (integer arithmetic wraps, bitwise ops
 * and logical ones are associative and commutative). Then: an op a type does not define is refused on every rank
 * naming the rank, the op and the type; one-sided accumulates and atomics take the bitwise ops too.
 */
class SmallTypesCollectivesTest {
    static final long SEED = Long.getLong("hcomm.test.seed", 0x5EED_2025L) ^ 0x5_17E5L;
    /** Element counts: empty, tiny, one-step sized, sliced, past the 16 KiB one-step limit and the ring switch. */
    static final long[] COUNTS = {0, 1, 37, 1001, 4099, 20_011};
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);

    /** The pairs this change brought: INT16 and BOOL with every op they take, the bitwise ops on every integer type. */
    static List<Object[]> newPairs() {
        List<Object[]> pairs = new ArrayList<>();
        for (DataType t : DataType.values()) {
            for (ReduceOp op : COLLECTIVE_OPS) {
                if ((t == DataType.INT16 || t == DataType.BOOL || op.bitwise()) && op.accepts(t)) pairs.add(new Object[] {t, op});
            }
        }
        return pairs;
    }

    /** Rank count, transport, and the job's place in the count rotation of {@link #sequence} (0..7). */
    static Stream<Arguments> jobs() {
        // every size over shared memory, three over TCP (the suite's time is budgeted)
        return Stream.of(Arguments.of(1, CommConfig.Transport.AUTO, 0), Arguments.of(2, CommConfig.Transport.AUTO, 1),
                Arguments.of(3, CommConfig.Transport.AUTO, 2), Arguments.of(5, CommConfig.Transport.AUTO, 3),
                Arguments.of(8, CommConfig.Transport.AUTO, 4), Arguments.of(2, CommConfig.Transport.TCP, 5),
                Arguments.of(3, CommConfig.Transport.TCP, 6), Arguments.of(5, CommConfig.Transport.TCP, 7));
    }

    // ------------------------------------------------------------------------------------ inputs and the reference

    /** Rank r's input at element i of op k: seeded random bits of the element's width (BOOL: 0 half the time). */
    static long input(DataType t, long seed, int k, int r, long i) {
        long z = mix(seed + k * 0x9E3779B97F4A7C15L + r * 0xC2B2AE3D27D4EB4FL + i * 0x165667B19E3779F9L);
        if (t == DataType.BOOL) return (z & 1) == 0 ? 0 : (z >>> 8) & 0xFF; // non-zero bytes of every value, 0 sometimes too
        return z & mask(t);
    }

    /** SplitMix64's finalizer: a counter-based random number. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long mask(DataType t) {
        return t.byteSize() == 8 ? -1L : (1L << (8 * t.byteSize())) - 1;
    }

    /** The element's value as the type reads it (signed, UINT8 unsigned). */
    static long signed(DataType t, long bits) {
        return switch (t) {
            case INT8 -> (byte) bits;
            case INT16 -> (short) bits;
            case INT32 -> (int) bits;
            case INT64 -> bits;
            default -> bits & 0xFF; // UINT8, BOOL
        };
    }

    /** {@code acc op x} on raw bits, as the documentation defines it; AVG sums here and divides in {@link #expected}. */
    static long combine(DataType t, ReduceOp op, long acc, long x) {
        if (t == DataType.BOOL) {
            boolean a = acc != 0;
            boolean b = x != 0;
            boolean r = switch (op) {
                case SUM, MAX, BOR -> a || b;
                case PROD, MIN, BAND -> a && b;
                case BXOR -> a != b;
                default -> throw new AssertionError(op + " on BOOL");
            };
            return r ? 1 : 0;
        }
        long a = signed(t, acc);
        long b = signed(t, x);
        long r = switch (op) {
            case SUM, AVG -> a + b;
            case PROD -> a * b;
            case MIN -> Math.min(a, b);
            case MAX -> Math.max(a, b);
            case BAND -> a & b;
            case BOR -> a | b;
            case BXOR -> a ^ b;
            default -> throw new AssertionError(op);
        };
        return r & mask(t);
    }

    /** The reduction of element i of op k over n ranks, folded in rank order. */
    static long expected(DataType t, ReduceOp op, long seed, int k, int n, long i) {
        long acc = input(t, seed, k, 0, i);
        if (t == DataType.BOOL) acc = acc != 0 ? 1 : 0; // one rank's BOOL is normalized too
        for (int r = 1; r < n; r++) acc = combine(t, op, acc, input(t, seed, k, r, i));
        if (op == ReduceOp.AVG) acc = (signed(t, acc) / n) & mask(t);
        return acc;
    }

    static long get(MemorySegment s, DataType t, long i) {
        return switch (t.byteSize()) {
            case 1 -> s.get(ValueLayout.JAVA_BYTE, i) & 0xFFL;
            case 2 -> s.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i) & 0xFFFFL;
            case 4 -> s.get(ValueLayout.JAVA_INT_UNALIGNED, 4 * i) & 0xFFFF_FFFFL;
            default -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, 8 * i);
        };
    }

    static void set(MemorySegment s, DataType t, long i, long bits) {
        switch (t.byteSize()) {
            case 1 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) bits);
            case 2 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i, (short) bits);
            case 4 -> s.set(ValueLayout.JAVA_INT_UNALIGNED, 4 * i, (int) bits);
            default -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, 8 * i, bits);
        }
    }

    /** Elements {@code [0, count)} of {@code s} against the reference elements {@code [from, from + count)}. */
    static void check(MemorySegment s, DataType t, ReduceOp op, long seed, int k, int n, long from, long count, String what) {
        for (long i = 0; i < count; i++) {
            long got = get(s, t, i);
            long want = expected(t, op, seed, k, n, from + i);
            if (got != want) {
                throw new AssertionError(what + ": element " + (from + i) + " is 0x" + Long.toHexString(got) + ", expected 0x"
                        + Long.toHexString(want));
            }
        }
    }

    // ------------------------------------------------------------------------------------ buffers

    /** Buffers of one op, in heap, native or registered memory (a registered one goes back to the pool at the end). */
    static final class Buffers implements AutoCloseable {
        private final Communicator c;
        private final Arena arena;
        private final Random local;
        private final List<RegisteredBuffer> registered = new ArrayList<>();

        Buffers(Communicator c, Arena arena, Random local) {
            this.c = c;
            this.arena = arena;
            this.local = local;
        }

        MemorySegment get(long bytes) {
            long b = Math.max(1, bytes);
            return switch (local.nextInt(3)) {
                case 0 -> MemorySegment.ofArray(new long[(int) ((b + 7) / 8)]).asSlice(0, b);
                case 1 -> arena.allocate(b, 8);
                default -> {
                    RegisteredBuffer r = c.memory().allocate(b);
                    registered.add(r);
                    yield r.segment().asSlice(0, b);
                }
            };
        }

        @Override
        public void close() {
            for (RegisteredBuffer r : registered) r.close();
            registered.clear();
        }
    }

    // ------------------------------------------------------------------------------------ the tests

    /**
     * Every new pair exact on every rank; on 3 ranks the same job then runs the refusals of undefined pairs and the
     * bitwise window ops (one set of sessions).
     */
    @ParameterizedTest(name = "{0} ranks, {1}")
    @MethodSource("jobs")
    void everyNewTypeAndOpIsExactOnEveryRank(int n, CommConfig.Transport transport, int rotation) throws Exception {
        long seed = SEED + 31L * n + transport.ordinal();
        Ranks.runThreads(n, Duration.ofMinutes(6), b -> b.transport(transport), h -> {
            Communicator c = h.world();
            long zc0 = ZeroCopyProbe.zeroCopyOps(c);
            sequence(c, seed, rotation);
            long zc = ZeroCopyProbe.zeroCopyOps(c);
            if (transport == CommConfig.Transport.TCP || n == 1) assertThat(zc).as("no shared-memory engine").isEqualTo(-1);
            else assertThat(zc - zc0).as("collectives that ran in shared memory").isPositive();
            if (n == 3) {
                undefinedPairsAreRefusedNamingRankOpAndType(c);
                windowsAccumulateWithTheBitwiseOps(c, SEED ^ transport.name().hashCode());
            }
        });
    }

    /**
     * Every new pair in allReduce, reduce and reduceScatter at one count of {@link #COUNTS}: pair p takes count
     * {@code (p + rotation) % COUNTS.length}, so every job has every count and, over the jobs' rotations 0..7, every pair
     * meets every count; seeded random blocking or async, in place or not, and root; every element checked.
     */
    static void sequence(Communicator c, long seed, int rotation) {
        int n = c.size();
        int me = c.rank();
        Random rnd = new Random(seed); // the same draws on every rank
        Random local = new Random(seed * 31 + me); // this rank's own choice of memory
        int k = 0;
        try (Arena arena = Arena.ofShared()) {
            List<Object[]> pairs = newPairs();
            for (int p = 0; p < pairs.size(); p++) {
                DataType t = (DataType) pairs.get(p)[0];
                ReduceOp op = (ReduceOp) pairs.get(p)[1];
                int es = t.byteSize();
                long count = COUNTS[(p + rotation) % COUNTS.length];
                boolean async = rnd.nextBoolean();
                boolean inPlace = rnd.nextBoolean();
                int root = rnd.nextInt(n);
                String what = "rank " + me + " of " + n + ": " + t + " " + op + " count " + count + (async ? " async" : "")
                        + (inPlace ? " in place" : "");
                try (Buffers bufs = new Buffers(c, arena, local)) {
                    // allReduce
                    k++;
                    MemorySegment send = bufs.get(count * es);
                    for (long i = 0; i < count; i++) set(send, t, i, input(t, seed, k, me, i));
                    MemorySegment recv = inPlace ? send : bufs.get(count * es);
                    if (async) c.allReduceAsync(send, recv, count, t, op).await();
                    else c.allReduce(send, recv, count, t, op);
                    check(recv, t, op, seed, k, n, 0, count, "allReduce " + what);

                    // reduce to a seeded root
                    k++;
                    send = bufs.get(count * es);
                    for (long i = 0; i < count; i++) set(send, t, i, input(t, seed, k, me, i));
                    recv = inPlace && me == root ? send : bufs.get(count * es);
                    if (async) c.reduceAsync(send, recv, count, t, op, root).await();
                    else c.reduce(send, recv, count, t, op, root);
                    if (me == root) check(recv, t, op, seed, k, n, 0, count, "reduce to " + root + " " + what);

                    // reduceScatter: block r of every rank's send goes, reduced, to rank r
                    k++;
                    long per = count / 2 + 1;
                    send = bufs.get(per * n * es);
                    for (long i = 0; i < per * n; i++) set(send, t, i, input(t, seed, k, me, i));
                    recv = bufs.get(per * es);
                    if (async) c.reduceScatterAsync(send, recv, per, t, op).await();
                    else c.reduceScatter(send, recv, per, t, op);
                    check(recv, t, op, seed, k, n, me * per, per, "reduceScatter " + what);
                }
            }
        }
    }

    /**
     * A bitwise op on a floating type, or AVG on BOOL, is refused on every rank before anything moves, naming the rank,
     * the op and the type; the communicator goes on.
     */
    static void undefinedPairsAreRefusedNamingRankOpAndType(Communicator c) {
        int n = c.size();
        int me = c.rank();
        MemorySegment buf = MemorySegment.ofArray(new float[64]);
        for (DataType t : DataType.values()) {
            for (ReduceOp op : COLLECTIVE_OPS) {
                if (op.accepts(t)) continue;
                String[] words = {"rank " + me, op.name(), t.name()};
                assertThatThrownBy(() -> c.allReduce(buf, buf, 8, t, op)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContainingAll(words).hasMessageContaining("allReduce");
                assertThatThrownBy(() -> c.reduce(buf, buf, 8, t, op, 0)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContainingAll(words);
                assertThatThrownBy(() -> c.reduceScatterAsync(buf, buf, 2, t, op)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContainingAll(words);
            }
        }
        assertThatThrownBy(() -> c.allReduce(buf, buf, 8, DataType.BOOL, ReduceOp.AVG))
                .hasMessageContaining("use SUM for a logical or");
        assertThatThrownBy(() -> c.allReduce(buf, buf, 8, DataType.FLOAT32, ReduceOp.BXOR))
                .hasMessageContaining("bitwise ops take the integer types");
        short[] v = {(short) (1 << me), (short) -1};
        c.allReduce(MemorySegment.ofArray(v), MemorySegment.ofArray(v), 2, DataType.INT16, ReduceOp.BOR);
        assertThat(v).containsExactly((short) ((1 << n) - 1), (short) -1);
    }

    /**
     * One-sided: accumulate and getAccumulate with BAND, BOR and BXOR on INT16, BOOL, INT32 and INT64 from every rank
     * into rank 0's block, fetchAndOp with them on INT32 and INT64, through mapped memory (AUTO) and through the target's
     * progress engine (TCP); a bitwise op on a floating type is refused naming the rank, the op and the type.
     */
    static void windowsAccumulateWithTheBitwiseOps(Communicator c, long seed) {
        int n = c.size();
        int count = 67;
        DataType[] types = {DataType.INT16, DataType.BOOL, DataType.INT32, DataType.INT64};
        ReduceOp[] ops = {ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR};
        int me = c.rank();
        long region = 8L * count;
        try (Window w = c.allocateWindow(region * types.length * ops.length + 64)) {
            w.fence();
            // rank 0's block starts as rank 0's inputs; ranks 1.. accumulate theirs, rank 1 with getAccumulate
            int k = 0;
            for (DataType t : types) {
                for (ReduceOp op : ops) {
                    long at = region * k;
                    MemorySegment mine = MemorySegment.ofArray(new long[count]).asSlice(0, (long) count * t.byteSize());
                    for (int i = 0; i < count; i++) set(mine, t, i, input(t, seed, k, me, i));
                    if (me == 0) MemorySegment.copy(mine, 0, w.segment(), at, mine.byteSize());
                    k++;
                }
            }
            w.fence();
            k = 0;
            for (DataType t : types) {
                for (ReduceOp op : ops) {
                    long at = region * k;
                    MemorySegment mine = MemorySegment.ofArray(new long[count]).asSlice(0, (long) count * t.byteSize());
                    for (int i = 0; i < count; i++) set(mine, t, i, input(t, seed, k, me, i));
                    if (me == 1) w.getAccumulate(mine, MemorySegment.ofArray(new long[count]).asSlice(0, mine.byteSize()), 0, at, t, op);
                    else if (me > 1) w.accumulate(mine, 0, at, t, op);
                    k++;
                }
            }
            w.fence();
            if (me == 0) {
                k = 0;
                for (DataType t : types) {
                    for (ReduceOp op : ops) {
                        MemorySegment got = w.segment().asSlice(region * k, (long) count * t.byteSize());
                        // the accumulates of ranks 1.. land in any order: the reference folds in rank order, exact anyway;
                        // BOOL: rank 0's own bytes stay as written until an accumulate rewrites them as 0 or 1
                        for (int i = 0; i < count; i++) {
                            long acc = input(t, seed, k, 0, i);
                            for (int r = 1; r < n; r++) acc = combine(t, op, acc, input(t, seed, k, r, i));
                            assertThat(get(got, t, i)).as("%s %s element %d", t, op, i).isEqualTo(acc);
                        }
                        k++;
                    }
                }
            }
            w.fence();
            // fetch-and-op: every rank applies its bit to rank 0's counters; the results are the values before
            long cell = region * types.length * ops.length;
            if (me == 0) {
                w.segment().set(ValueLayout.JAVA_INT, cell, -1);
                w.segment().set(ValueLayout.JAVA_LONG, cell + 8, 0);
                w.segment().set(ValueLayout.JAVA_LONG, cell + 16, 0x0F0F);
            }
            w.fence();
            w.fetchAndOp(~(1L << me), 0, cell, DataType.INT32, ReduceOp.BAND);
            long before = w.fetchAndOp(1L << (40 + me), 0, cell + 8, DataType.INT64, ReduceOp.BOR);
            assertThat(before & ~(7L << 40)).isZero();
            w.fetchAndOp(0xFFL << (8 * me), 0, cell + 16, DataType.INT64, ReduceOp.BXOR);
            w.fence();
            if (me == 0) {
                assertThat(w.segment().get(ValueLayout.JAVA_INT, cell)).isEqualTo(~0b111);
                assertThat(w.segment().get(ValueLayout.JAVA_LONG, cell + 8)).isEqualTo(7L << 40);
                assertThat(w.segment().get(ValueLayout.JAVA_LONG, cell + 16)).isEqualTo(0x0F0FL ^ 0xFFFFFFL);
            }
            MemorySegment floats = MemorySegment.ofArray(new float[4]);
            assertThatThrownBy(() -> w.accumulate(floats, 0, 0, DataType.FLOAT32, ReduceOp.BOR))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContainingAll("rank " + me, "BOR", "FLOAT32");
            assertThatThrownBy(() -> w.fetchAndOp(1, 0, 0, DataType.INT32, ReduceOp.AVG)).isInstanceOf(IllegalArgumentException.class);
            w.fence();
        }
    }
}
