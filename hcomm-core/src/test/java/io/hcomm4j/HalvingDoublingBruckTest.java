package io.hcomm4j;

import static io.hcomm4j.ReductionCollectivesTest.bits;
import static io.hcomm4j.ReductionCollectivesTest.check;
import static io.hcomm4j.ReductionCollectivesTest.input;
import static io.hcomm4j.ReductionCollectivesTest.put;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The recursive halving-doubling (Rabenseifner) all-reduce and reduce-scatter(V) and the Bruck all-to-all,
 * forced through HCOMM_ALGO, on 1..8 ranks (threads over real sockets): every DataType with every ReduceOp at
 * every count of {@link #COUNTS} (0, 1, counts below the rank count, primes), each element on each rank against
 * the exact reference of {@link ReductionCollectivesTest}; and, with inexact floating-point inputs where the
 * reduction order changes the bits, the same bits on every rank and in every run.
 */
class HalvingDoublingBruckTest {
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);
    static final String FORCED = "allreduce=halving_doubling;reducescatter=hd;alltoall=bruck";
    static final long[] COUNTS = {0, 1, 2, 3, 5, 7, 13, 97, 1009};

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
    void everyTypeOpAndCountIsExactOnEveryRank(int n) throws Exception {
        Ranks.runThreads(n, Duration.ofMinutes(4), cfg -> cfg.algo(FORCED), h -> {
            Communicator c = h.world();
            int me = c.rank();
            int k = 0;
            for (DataType t : DataType.values()) {
                for (ReduceOp op : COLLECTIVE_OPS) {
                    if (!op.accepts(t)) continue; // BAND on floats, AVG on BOOL: refused (SmallTypesCollectivesTest)
                    for (int ci = 0; ci < COUNTS.length; ci++) {
                        long count = COUNTS[ci];
                        k++;
                        int es = t.byteSize();
                        String what = "n=" + n + " rank " + me + " " + t + " " + op + " count " + count;
                        try (Arena arena = Arena.ofShared()) {
                            MemorySegment send = arena.allocate(Math.max(1, count * es));
                            for (long i = 0; i < count; i++) put(send, t, i, input(t, op, me, k, i));
                            MemorySegment recv = k % 2 == 0 ? send : arena.allocate(Math.max(1, count * es));
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
        });
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4, 5, 6, 7, 8})
    void inexactFloatsGiveTheSameBitsOnEveryRankAndInEveryRun(int n) throws Exception {
        DataType[] types = {DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT32, DataType.FLOAT64};
        ReduceOp[] ops = {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PROD};
        Ranks.runThreads(n, Duration.ofMinutes(4), cfg -> cfg.algo(FORCED), h -> {
            Communicator c = h.world();
            int me = c.rank();
            for (DataType t : types) {
                for (ReduceOp op : ops) {
                    for (long count : new long[] {1, 7, 1009}) {
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
        });
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
    void bruckAllToAllDeliversEveryBlock(int n) throws Exception {
        Ranks.runThreads(n, Duration.ofMinutes(4), cfg -> cfg.algo(FORCED), h -> {
            Communicator c = h.world();
            int me = c.rank();
            int k = 0;
            for (DataType t : new DataType[] {DataType.UINT8, DataType.BFLOAT16, DataType.INT32, DataType.FLOAT64}) {
                for (long count : COUNTS) {
                    for (boolean inPlace : new boolean[] {false, true}) {
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
        });
    }
}
