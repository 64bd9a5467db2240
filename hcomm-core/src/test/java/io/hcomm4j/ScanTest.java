package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * scan and exscan (MPI_Scan, MPI_Exscan) on 1 to 8 ranks over shared memory and TCP: seeded random inputs of four
 * types and four ops, small and multi-chunk (past the pipeline's 1 MiB chunk), in place and not, blocking and async;
 * every element of every rank equals the left fold in rank order computed here (bit for bit, floats included), and
 * exscan leaves rank 0's buffer as it was. AVG is refused on every rank.
 */
class ScanTest {
    private record Case(DataType type, ReduceOp op, int count) {
    }

    private static final Case[] CASES = {
        new Case(DataType.INT32, ReduceOp.SUM, 1),
        new Case(DataType.INT64, ReduceOp.MAX, 1000),
        new Case(DataType.FLOAT32, ReduceOp.SUM, 300_000), // 1.2 MB: two chunks of the pipeline
        new Case(DataType.FLOAT64, ReduceOp.PROD, 7),
        new Case(DataType.INT32, ReduceOp.MIN, 70_000),
    };

    @ParameterizedTest(name = "{0} ranks over {1}")
    @CsvSource({"1, AUTO", "2, AUTO", "3, AUTO", "5, AUTO", "8, AUTO", "2, TCP", "3, TCP", "5, TCP"})
    void everyRankGetsTheLeftFoldOfTheRanksBeforeIt(int n, CommConfig.Transport transport) throws Exception {
        long seed = 977L * n + transport.ordinal();
        Ranks.runThreads(n, Duration.ofMinutes(3), b -> b.transport(transport), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            try (Arena arena = Arena.ofShared()) {
                int k = 0;
                for (Case cs : CASES) {
                    for (boolean exclusive : new boolean[] {false, true}) {
                        for (boolean inPlace : new boolean[] {false, true}) {
                            k++;
                            long bytes = (long) cs.count() * cs.type().byteSize();
                            MemorySegment[] inputs = new MemorySegment[n];
                            for (int r = 0; r < n; r++) inputs[r] = input(arena, cs, new Random(seed * 31 + k * 1009L + r));
                            MemorySegment send = arena.allocate(bytes, 8).copyFrom(inputs[rank]);
                            MemorySegment recv = inPlace ? send : arena.allocate(bytes, 8);
                            if (!inPlace) recv.fill((byte) 0x5A);
                            MemorySegment before = arena.allocate(bytes, 8).copyFrom(recv);
                            if ((k & 1) == 0) {
                                if (exclusive) c.exscan(send, recv, cs.count(), cs.type(), cs.op());
                                else c.scan(send, recv, cs.count(), cs.type(), cs.op());
                            } else {
                                (exclusive ? c.exscanAsync(send, recv, cs.count(), cs.type(), cs.op())
                                        : c.scanAsync(send, recv, cs.count(), cs.type(), cs.op())).await();
                            }
                            String what = (exclusive ? "exscan " : "scan ") + cs + (inPlace ? " in place" : "") + " on rank " + rank;
                            if (exclusive && rank == 0) {
                                assertThat(recv.mismatch(before)).as(what + ": rank 0's buffer stays").isEqualTo(-1);
                                continue;
                            }
                            MemorySegment expected = arena.allocate(bytes, 8).copyFrom(inputs[0]);
                            int upTo = exclusive ? rank - 1 : rank;
                            for (int r = 1; r <= upTo; r++) fold(expected, inputs[r], cs);
                            long at = recv.mismatch(expected);
                            assertThat(at).as(what + ": first differing byte").isEqualTo(-1);
                        }
                    }
                }
                MemorySegment s = arena.allocate(16);
                assertThatThrownBy(() -> c.scan(s, s, 2, DataType.INT64, ReduceOp.AVG)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("rank " + rank + ": scan: op AVG has no prefix form; scan with SUM and divide by rank + 1");
                long[] ones = new long[3];
                java.util.Arrays.fill(ones, rank + 1);
                c.scan(ones, ReduceOp.SUM);
                assertThat(ones).containsOnly((long) (rank + 1) * (rank + 2) / 2);
            }
        });
    }

    private static MemorySegment input(Arena arena, Case cs, Random random) {
        MemorySegment m = arena.allocate((long) cs.count() * cs.type().byteSize(), 8);
        for (int i = 0; i < cs.count(); i++) {
            switch (cs.type()) {
                case INT32 -> m.setAtIndex(ValueLayout.JAVA_INT, i, random.nextInt(2001) - 1000);
                case INT64 -> m.setAtIndex(ValueLayout.JAVA_LONG, i, random.nextLong());
                case FLOAT32 -> m.setAtIndex(ValueLayout.JAVA_FLOAT, i, random.nextFloat() * 2 - 1);
                case FLOAT64 -> m.setAtIndex(ValueLayout.JAVA_DOUBLE, i, 0.5 + random.nextDouble());
                default -> throw new IllegalArgumentException(cs.type().toString());
            }
        }
        return m;
    }

    /** {@code acc = acc OP in}, element by element, as Java computes it. */
    private static void fold(MemorySegment acc, MemorySegment in, Case cs) {
        for (int i = 0; i < cs.count(); i++) {
            switch (cs.type()) {
                case INT32 -> {
                    int a = acc.getAtIndex(ValueLayout.JAVA_INT, i), b = in.getAtIndex(ValueLayout.JAVA_INT, i);
                    acc.setAtIndex(ValueLayout.JAVA_INT, i, switch (cs.op()) {
                        case SUM -> a + b;
                        case MIN -> Math.min(a, b);
                        case MAX -> Math.max(a, b);
                        case PROD -> a * b;
                        default -> throw new IllegalArgumentException();
                    });
                }
                case INT64 -> {
                    long a = acc.getAtIndex(ValueLayout.JAVA_LONG, i), b = in.getAtIndex(ValueLayout.JAVA_LONG, i);
                    acc.setAtIndex(ValueLayout.JAVA_LONG, i, switch (cs.op()) {
                        case SUM -> a + b;
                        case MIN -> Math.min(a, b);
                        case MAX -> Math.max(a, b);
                        case PROD -> a * b;
                        default -> throw new IllegalArgumentException();
                    });
                }
                case FLOAT32 -> {
                    float a = acc.getAtIndex(ValueLayout.JAVA_FLOAT, i), b = in.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                    acc.setAtIndex(ValueLayout.JAVA_FLOAT, i, switch (cs.op()) {
                        case SUM -> a + b;
                        case PROD -> a * b;
                        default -> throw new IllegalArgumentException();
                    });
                }
                case FLOAT64 -> {
                    double a = acc.getAtIndex(ValueLayout.JAVA_DOUBLE, i), b = in.getAtIndex(ValueLayout.JAVA_DOUBLE, i);
                    acc.setAtIndex(ValueLayout.JAVA_DOUBLE, i, switch (cs.op()) {
                        case SUM -> a + b;
                        case PROD -> a * b;
                        default -> throw new IllegalArgumentException();
                    });
                }
                default -> throw new IllegalArgumentException();
            }
        }
    }
}
