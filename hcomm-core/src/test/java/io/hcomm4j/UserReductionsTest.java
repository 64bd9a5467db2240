package io.hcomm4j;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.comm.ZeroCopyProbe;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * User-defined reductions ({@link ReduceFunction}) on real ranks (threads of this JVM with their own sessions), 1, 2, 3,
 * 5 and 8 ranks, through shared memory (AUTO) and through TCP, plus TCP with the ring, halving-doubling and recursive
 * doubling forced: allReduce, reduce and reduceScatter, blocking and async, heap, native and registered memory, seeded
 * random inputs, every element on every rank checked against a reference computed sequentially here:
 * <ul>
 *   <li>max by magnitude, ties to the larger value, on INT32 (associative and commutative: the reference is exact);</li>
 *   <li>exclusive or on INT64, written as a plain lambda (exact);</li>
 *   <li>max by magnitude, ties to the first operand (associative, not commutative: which of two tied values wins
 *       depends on the order the library combines in) and a float64 sum (not associative in floating point): every
 *       element must be a valid result (one of the tied values; within rounding of the exact sum), and an allReduce's
 *       result must be bit-identical on every rank, the determinism guarantee.</li>
 * </ul>
 * Then: a function that throws on one rank fails the collective there with a {@link ReduceFunctionException} (its
 * exception the cause) and on the others with an {@link HcommException} long before the timeout, and the communicator
 * goes on; differently named functions, or a function against a built-in op, are a {@link CollectiveMismatchException}.
 */
class UserReductionsTest {
    static final long SEED = Long.getLong("hcomm.test.seed", 0x5EED_2025L) ^ 0xF00DL;
    static final long[] COUNTS = {0, 1, 37, 1001, 4099, 20_011, 65_537};

    /** Max by magnitude, ties to the larger value: the result is the same whatever the order. */
    static final ReduceFunction MAX_ABS = ReduceFunction.named("maxAbs", (a, ao, b, bo, out, oo, count) -> {
        for (long i = 0; i < count; i++) {
            int x = a.get(JAVA_INT_UNALIGNED, ao + 4 * i);
            int y = b.get(JAVA_INT_UNALIGNED, bo + 4 * i);
            out.set(JAVA_INT_UNALIGNED, oo + 4 * i, maxAbs(x, y));
        }
    });

    /** Max by magnitude, ties to the first operand: -3 and 3 give -3 one way round and 3 the other. */
    static final ReduceFunction FIRST_MAX_ABS = ReduceFunction.named("firstMaxAbs", (a, ao, b, bo, out, oo, count) -> {
        for (long i = 0; i < count; i++) {
            int x = a.get(JAVA_INT_UNALIGNED, ao + 4 * i);
            int y = b.get(JAVA_INT_UNALIGNED, bo + 4 * i);
            out.set(JAVA_INT_UNALIGNED, oo + 4 * i, Math.abs(x) >= Math.abs(y) ? x : y);
        }
    });

    /** Exclusive or of longs, unnamed. */
    static final ReduceFunction XOR64 = (a, ao, b, bo, out, oo, count) -> {
        for (long i = 0; i < count; i++) {
            out.set(JAVA_LONG_UNALIGNED, oo + 8 * i, a.get(JAVA_LONG_UNALIGNED, ao + 8 * i) ^ b.get(JAVA_LONG_UNALIGNED, bo + 8 * i));
        }
    };

    /** A float64 sum: rounding makes the bits depend on the order, so only a fixed order gives every rank the same. */
    static final ReduceFunction SUM64 = ReduceFunction.named("sum64", (a, ao, b, bo, out, oo, count) -> {
        for (long i = 0; i < count; i++) {
            out.set(JAVA_DOUBLE_UNALIGNED, oo + 8 * i, a.get(JAVA_DOUBLE_UNALIGNED, ao + 8 * i) + b.get(JAVA_DOUBLE_UNALIGNED, bo + 8 * i));
        }
    });

    static int maxAbs(int x, int y) {
        int ax = Math.abs(x);
        int ay = Math.abs(y);
        return ax != ay ? (ax > ay ? x : y) : Math.max(x, y);
    }

    /** One of the functions under test and how its results are checked. */
    enum Fn {
        MAX_ABS(UserReductionsTest.MAX_ABS, DataType.INT32, true),
        XOR64(UserReductionsTest.XOR64, DataType.INT64, true),
        FIRST_MAX_ABS(UserReductionsTest.FIRST_MAX_ABS, DataType.INT32, false),
        SUM64(UserReductionsTest.SUM64, DataType.FLOAT64, false);

        final ReduceFunction function;
        final DataType type;
        /** The reference is exact (else a result is checked for validity, and allReduce for equality across ranks). */
        final boolean exact;

        Fn(ReduceFunction function, DataType type, boolean exact) {
            this.function = function;
            this.type = type;
            this.exact = exact;
        }

        /** Rank r's input at element i of op k, as raw bits: small magnitudes (ties are common) or doubles in (-1, 1). */
        long input(long seed, int k, int r, long i) {
            long z = SmallTypesCollectivesTest.mix(seed + k * 0x9E3779B97F4A7C15L + r * 0xC2B2AE3D27D4EB4FL + i * 0x165667B19E3779F9L);
            return switch (this) {
                case MAX_ABS, FIRST_MAX_ABS -> 0xFFFF_FFFFL & (Math.floorMod(z, 17) - 8);
                case XOR64 -> z;
                case SUM64 -> Double.doubleToRawLongBits((z >> 11) * 0x1.0p-52 * Math.scalb(1.0, (int) ((z >>> 3) & 7) - 7));
            };
        }

        /** Throws unless {@code got} is a right result for element i of op k on n ranks. */
        void check(long got, long seed, int k, int n, long i, String what) {
            switch (this) {
                case MAX_ABS, XOR64 -> {
                    long want = input(seed, k, 0, i);
                    for (int r = 1; r < n; r++) {
                        long x = input(seed, k, r, i);
                        want = this == XOR64 ? want ^ x : 0xFFFF_FFFFL & maxAbs((int) want, (int) x);
                    }
                    if (got != want) throw new AssertionError(what + ": element " + i + " is 0x" + Long.toHexString(got) + ", expected 0x"
                            + Long.toHexString(want));
                }
                case FIRST_MAX_ABS -> {
                    int max = 0;
                    for (int r = 0; r < n; r++) max = Math.max(max, Math.abs((int) input(seed, k, r, i)));
                    boolean some = false;
                    for (int r = 0; r < n; r++) some |= (int) input(seed, k, r, i) == (int) got;
                    if (Math.abs((int) got) != max || !some) {
                        throw new AssertionError(what + ": element " + i + " is " + (int) got + ", not an input of magnitude " + max);
                    }
                }
                case SUM64 -> {
                    double sum = 0;
                    double magnitude = 0;
                    for (int r = 0; r < n; r++) {
                        double x = Double.longBitsToDouble(input(seed, k, r, i));
                        sum += x;
                        magnitude += Math.abs(x);
                    }
                    double g = Double.longBitsToDouble(got);
                    if (!(Math.abs(g - sum) <= 1e-13 * magnitude)) {
                        throw new AssertionError(what + ": element " + i + " is " + g + ", the sum is " + sum);
                    }
                }
            }
        }
    }

    /** Rank count, transport, HCOMM_ALGO, and the job's place in the count rotation of {@link #sequence} (0..9). */
    static Stream<Arguments> jobs() {
        // every size over shared memory, two over TCP (the forced algorithms below add three more TCP jobs)
        Stream<Arguments> plain = Stream.concat(Stream.of(1, 2, 3, 5, 8).map(n -> Arguments.of(n, CommConfig.Transport.AUTO, "")),
                Stream.of(2, 5).map(n -> Arguments.of(n, CommConfig.Transport.TCP, "")));
        Stream<Arguments> forced = Stream.of(
                Arguments.of(3, CommConfig.Transport.TCP, "allreduce=ring;reducescatter=ring"),
                Arguments.of(5, CommConfig.Transport.TCP, "allreduce=halving_doubling;reducescatter=halving_doubling"),
                Arguments.of(5, CommConfig.Transport.TCP, "allreduce=recursive_doubling"));
        int[] rotation = {0};
        return Stream.concat(plain, forced).map(a -> Arguments.of(a.get()[0], a.get()[1], a.get()[2], rotation[0]++));
    }

    @ParameterizedTest(name = "{0} ranks, {1}, HCOMM_ALGO=''{2}''")
    @MethodSource("jobs")
    void everyElementOnEveryRankIsRight(int n, CommConfig.Transport transport, String algo, int rotation) throws Exception {
        long seed = SEED + 131L * n + transport.ordinal() + algo.hashCode();
        Ranks.runThreads(n, Duration.ofMinutes(6), b -> b.transport(transport).algo(algo), h -> {
            Communicator c = h.world();
            long zc0 = ZeroCopyProbe.zeroCopyOps(c);
            sequence(c, seed, rotation);
            long zc = ZeroCopyProbe.zeroCopyOps(c);
            if (transport == CommConfig.Transport.TCP || n == 1) assertThat(zc).as("no shared-memory engine").isEqualTo(-1);
            else assertThat(zc - zc0).as("user reductions that ran in shared memory").isPositive();
        });
    }

    /**
     * Every function in allReduce, reduce and reduceScatter, twice each: function f's round r at count
     * {@code COUNTS[(2 * rotation + r + f) % COUNTS.length]}, so over the jobs' rotations 0..9 every function meets every
     * count (and every job five of them); seeded random blocking or async, in place or not, root and memory.
     */
    static void sequence(Communicator c, long seed, int rotation) {
        int n = c.size();
        int me = c.rank();
        Random rnd = new Random(seed);
        Random local = new Random(seed * 31 + me);
        int k = 0;
        try (Arena arena = Arena.ofShared()) {
            for (Fn fn : Fn.values()) {
                DataType t = fn.type;
                int es = t.byteSize();
                for (int round = 0; round < 2; round++) {
                    long count = COUNTS[(2 * rotation + round + fn.ordinal()) % COUNTS.length];
                    boolean async = rnd.nextBoolean();
                    boolean inPlace = rnd.nextBoolean();
                    int root = rnd.nextInt(n);
                    String what = "rank " + me + " of " + n + ": " + fn + " count " + count + (async ? " async" : "")
                            + (inPlace ? " in place" : "");
                    try (SmallTypesCollectivesTest.Buffers bufs = new SmallTypesCollectivesTest.Buffers(c, arena, local)) {
                        k++;
                        MemorySegment send = bufs.get(count * es);
                        for (long i = 0; i < count; i++) SmallTypesCollectivesTest.set(send, t, i, fn.input(seed, k, me, i));
                        MemorySegment recv = inPlace ? send : bufs.get(count * es);
                        if (async) c.allReduceAsync(send, recv, count, t, fn.function).await();
                        else c.allReduce(send, recv, count, t, fn.function);
                        for (long i = 0; i < count; i++) fn.check(SmallTypesCollectivesTest.get(recv, t, i), seed, k, n, i, "allReduce " + what);
                        sameOnEveryRank(c, recv, count * es, "allReduce " + what);

                        k++;
                        send = bufs.get(count * es);
                        for (long i = 0; i < count; i++) SmallTypesCollectivesTest.set(send, t, i, fn.input(seed, k, me, i));
                        recv = inPlace && me == root ? send : bufs.get(count * es);
                        if (async) c.reduceAsync(send, recv, count, t, fn.function, root).await();
                        else c.reduce(send, recv, count, t, fn.function, root);
                        if (me == root) {
                            for (long i = 0; i < count; i++) fn.check(SmallTypesCollectivesTest.get(recv, t, i), seed, k, n, i, "reduce " + what);
                        }

                        k++;
                        long per = count / 3 + 1;
                        send = bufs.get(per * n * es);
                        for (long i = 0; i < per * n; i++) SmallTypesCollectivesTest.set(send, t, i, fn.input(seed, k, me, i));
                        recv = bufs.get(per * es);
                        if (async) c.reduceScatterAsync(send, recv, per, t, fn.function).await();
                        else c.reduceScatter(send, recv, per, t, fn.function);
                        for (long i = 0; i < per; i++) {
                            fn.check(SmallTypesCollectivesTest.get(recv, t, i), seed, k, n, me * per + i, "reduceScatter " + what);
                        }
                    }
                }
            }
        }
    }

    /** Every rank's {@code bytes} of {@code result} are the same bits (gathered to every rank and compared). */
    static void sameOnEveryRank(Communicator c, MemorySegment result, long bytes, String what) {
        int n = c.size();
        if (n == 1 || bytes == 0) return;
        MemorySegment all = MemorySegment.ofArray(new byte[(int) (bytes * n)]);
        c.allGather(result.asSlice(0, bytes), all, bytes, DataType.INT8);
        for (int r = 0; r < n; r++) {
            long at = all.asSlice(r * bytes, bytes).mismatch(result.asSlice(0, bytes));
            if (at >= 0) throw new AssertionError(what + ": rank " + r + "'s result differs from rank " + c.rank() + "'s at byte " + at);
        }
    }

    /**
     * Rank 1's function throws: there the collective fails with a ReduceFunctionException naming the rank, the op and
     * the function, its exception the cause; every other rank's call fails with an HcommException well before the 60 s
     * timeout (the shared-memory error word, or the transport's notice, which names rank 1), but for a rank whose part no
     * longer needs rank 1 (over TCP, rank 0's block of the ring reduce-scatter); the next collectives, with
     * a built-in op and with a function, are right everywhere. Counts past the one-step shared-memory all-reduce, where
     * every rank reduces everything itself and the others would finish without rank 1.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"AUTO", "TCP"})
    void aThrowingFunctionFailsTheCollectiveOnEveryRankWithoutAHang(String transport) throws Exception {
        int n = 3;
        int count = 20_011;
        Map<String, String> seen = new ConcurrentHashMap<>();
        Ranks.runThreads(n, Duration.ofMinutes(3), b -> b.transport(CommConfig.Transport.valueOf(transport)), h -> {
            Communicator c = h.world();
            int me = c.rank();
            IllegalStateException refusal = new IllegalStateException("rank 1 will not combine");
            ReduceFunction flaky = ReduceFunction.named("flaky", me != 1 ? MAX_ABS : (a, ao, b, bo, out, oo, cnt) -> {
                throw refusal;
            });
            int[] data = new int[count];
            int[] block = new int[count / n];
            for (String op : new String[] {"allReduce", "reduceScatterAsync"}) {
                long t0 = System.nanoTime();
                MemorySegment seg = MemorySegment.ofArray(data);
                Throwable thrown = catchThrowable(() -> {
                    if (op.equals("allReduce")) c.allReduce(seg, seg, count, DataType.INT32, flaky);
                    else c.reduceScatterAsync(seg, MemorySegment.ofArray(block), count / n, DataType.INT32, flaky).await();
                });
                long ms = (System.nanoTime() - t0) / 1_000_000;
                seen.put(op + " rank " + me, thrown + " [" + ms + " ms]");
                assertThat(ms).as("%s failed on rank %d long before the 60 s timeout", op, me).isLessThan(20_000);
                if (me == 1) {
                    assertThat(thrown).isInstanceOf(ReduceFunctionException.class).hasCause(refusal)
                            .hasMessageContainingAll("rank 1", op.replace("Async", ""), "'flaky'", "rank 1 will not combine");
                } else if (thrown == null) {
                    // the ring reduce-scatter: block 0 is combined by ranks 2 and 0 only, so rank 0 may finish its block
                    // before rank 1's notice arrives (ReduceFunction: a rank that no longer needs the failed one may complete)
                    assertThat(transport + " " + op + " on rank " + me).isEqualTo("TCP reduceScatterAsync on rank 0");
                } else {
                    assertThat(thrown).as("%s on rank %d", op, me).isInstanceOf(HcommException.class).hasMessageContaining("rank 1");
                    if (transport.equals("TCP")) assertThat(thrown).isInstanceOf(ReduceFunctionException.class).hasNoCause();
                }
            }
            // the communicator goes on, with a built-in op and with a function
            long[] sum = {me + 1};
            c.allReduce(sum, ReduceOp.SUM);
            assertThat(sum[0]).isEqualTo((long) n * (n + 1) / 2);
            for (int i = 0; i < count; i++) data[i] = (i + me) % 7 - 3;
            MemorySegment seg = MemorySegment.ofArray(data);
            c.allReduce(seg, seg, count, DataType.INT32, MAX_ABS);
            for (int i = 0; i < count; i++) {
                int want = 0;
                for (int r = 0; r < n; r++) want = maxAbs(want, (i + r) % 7 - 3);
                assertThat(data[i]).as("element %d after the failure", i).isEqualTo(want);
            }
        });
        System.out.println("UserReductionsTest failure over " + transport + ": " + seen);
    }

    /**
     * A function's name goes into the fingerprint: ranks that pass different names, or a built-in op where the others
     * pass a function, all get a CollectiveMismatchException; a null function is refused naming it; the communicator
     * goes on.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"AUTO", "TCP"})
    void differentFunctionsAreAMismatch(String transport) throws Exception {
        int n = 3;
        Ranks.runThreads(n, Duration.ofMinutes(2), b -> b.transport(CommConfig.Transport.valueOf(transport)), h -> {
            Communicator c = h.world();
            int me = c.rank();
            int[] data = new int[5000];
            MemorySegment seg = MemorySegment.ofArray(data);
            ReduceFunction mine = me == 2 ? ReduceFunction.named("other", MAX_ABS) : MAX_ABS;
            assertThatThrownBy(() -> c.allReduce(seg, seg, data.length, DataType.INT32, mine))
                    .isInstanceOf(CollectiveMismatchException.class).hasMessageContaining("rank 2");
            assertThatThrownBy(() -> {
                if (me == 0) c.allReduce(seg, seg, data.length, DataType.INT32, ReduceOp.MAX);
                else c.allReduce(seg, seg, data.length, DataType.INT32, MAX_ABS);
            }).isInstanceOf(CollectiveMismatchException.class).hasMessageContaining("rank 0");
            assertThatThrownBy(() -> c.allReduce(seg, seg, data.length, DataType.INT32, (ReduceFunction) null))
                    .isInstanceOf(NullPointerException.class).hasMessage("rank " + me + ": allReduce: function is null");
            int[] v = {me};
            c.allReduce(MemorySegment.ofArray(v), MemorySegment.ofArray(v), 1, DataType.INT32, MAX_ABS);
            assertThat(v[0]).isEqualTo(n - 1);
        });
    }
}
