package io.hcomm4j;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The stream forms of the collectives that had none (gather(V), scatter(V), allGatherV, reduceScatterV, allToAllV,
 * scan, exscan, and the reductions with a user's {@link ReduceFunction}), queued on one stream in order, and the overloads that take the count from a buffer's size; on 1 to
 * 5 ranks, shared memory and TCP, every element of every rank checked against values computed here from seeded inputs.
 * A buffer that is not a whole number of elements is refused on every rank.
 */
class StreamFormsAndSizedCallsTest {
    @ParameterizedTest(name = "{0} ranks over {1}")
    @CsvSource({"1, AUTO", "2, AUTO", "3, AUTO", "5, AUTO", "3, TCP"})
    void everyCollectiveOnAStreamAndFromSizes(int n, CommConfig.Transport transport) throws Exception {
        long seed = 7919L * n + transport.ordinal();
        Ranks.runThreads(n, Duration.ofMinutes(2), b -> b.transport(transport), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            int k = 1 + new Random(seed).nextInt(50); // elements per rank's block, the same on every rank
            try (Arena a = Arena.ofShared(); Stream s = c.newStream()) {
                MemorySegment mine = ints(a, k, r -> value(seed, rank, r));
                MemorySegment gathered = a.allocate(4L * k * n);
                MemorySegment scattered = a.allocate(4L * k);
                MemorySegment all = ints(a, k * n, i -> value(seed, i / k, i % k)); // what every rank holds, in rank order
                long[] counts = new long[n];
                long[] displs = new long[n];
                for (int r = 0; r < n; r++) {
                    counts[r] = r + 1;
                    displs[r] = (long) r * (r + 1) / 2;
                }
                long total = (long) n * (n + 1) / 2;
                MemorySegment vMine = ints(a, rank + 1, i -> value(seed, rank, i));
                MemorySegment vAll = a.allocate(4 * total);
                MemorySegment scanned = a.allocate(4L * k);
                MemorySegment exscanned = ints(a, k, i -> -1);
                MemorySegment toAll = ints(a, k * n, i -> value(seed, rank, i));
                MemorySegment fromAll = a.allocate(4L * k * n);
                s.gather(mine, gathered, k, DataType.INT32, 0);
                s.scatter(all, scattered, k, DataType.INT32, n - 1);
                s.allGatherV(vMine, vAll, counts, displs, DataType.INT32);
                s.scan(mine, scanned, k, DataType.INT32, ReduceOp.SUM);
                s.exscan(mine, exscanned, k, DataType.INT32, ReduceOp.SUM);
                s.allToAllV(toAll, fill(n, k), blocks(n, k), fromAll, fill(n, k), blocks(n, k), DataType.INT32);
                // a user's reduce function on the stream: all-reduce, reduce to the last rank, reduce-scatter
                MemorySegment maxAbsAll = a.allocate(4L * k);
                MemorySegment maxAbsRoot = a.allocate(4L * k);
                MemorySegment signedAll = ints(a, k * n, i -> signed(seed, rank, i));
                MemorySegment maxAbsBlock = a.allocate(4L * k);
                MemorySegment signedMine = ints(a, k, i -> signed(seed, rank, i));
                s.allReduce(signedMine, maxAbsAll, k, DataType.INT32, UserReductionsTest.MAX_ABS);
                s.reduce(signedMine, maxAbsRoot, k, DataType.INT32, UserReductionsTest.MAX_ABS, n - 1);
                s.reduceScatter(signedAll, maxAbsBlock, k, DataType.INT32, UserReductionsTest.MAX_ABS);
                s.synchronize();
                for (int i = 0; i < k; i++) {
                    int every = signed(seed, 0, i), block = signed(seed, 0, rank * k + i);
                    for (int r = 1; r < n; r++) {
                        every = UserReductionsTest.maxAbs(every, signed(seed, r, i));
                        block = UserReductionsTest.maxAbs(block, signed(seed, r, rank * k + i));
                    }
                    assertThat(maxAbsAll.getAtIndex(JAVA_INT, i)).as("allReduce maxAbs on the stream, %d", i).isEqualTo(every);
                    if (rank == n - 1) assertThat(maxAbsRoot.getAtIndex(JAVA_INT, i)).as("reduce maxAbs on the stream, %d", i).isEqualTo(every);
                    assertThat(maxAbsBlock.getAtIndex(JAVA_INT, i)).as("reduceScatter maxAbs on the stream, %d", i).isEqualTo(block);
                }
                if (rank == 0) assertThat(gathered.mismatch(all)).as("gather on the stream").isEqualTo(-1);
                assertThat(scattered.mismatch(mine)).as("scatter on the stream").isEqualTo(-1);
                for (int r = 0; r < n; r++) {
                    for (int i = 0; i <= r; i++) {
                        assertThat(vAll.getAtIndex(JAVA_INT, displs[r] + i)).as("allGatherV: rank %d's %d", r, i).isEqualTo(value(seed, r, i));
                    }
                }
                for (int i = 0; i < k; i++) {
                    int inclusive = 0;
                    for (int r = 0; r <= rank; r++) inclusive += value(seed, r, i);
                    assertThat(scanned.getAtIndex(JAVA_INT, i)).as("scan %d", i).isEqualTo(inclusive);
                    int exclusive = rank == 0 ? -1 : inclusive - value(seed, rank, i);
                    assertThat(exscanned.getAtIndex(JAVA_INT, i)).as("exscan %d", i).isEqualTo(exclusive);
                }
                for (int r = 0; r < n; r++) {
                    for (int i = 0; i < k; i++) {
                        assertThat(fromAll.getAtIndex(JAVA_INT, (long) r * k + i)).as("allToAllV from %d", r).isEqualTo(value(seed, r, rank * k + i));
                    }
                }
                // counts from sizes
                MemorySegment sum = ints(a, k, i -> value(seed, rank, i));
                c.allReduce(sum, DataType.INT32, ReduceOp.SUM);
                for (int i = 0; i < k; i++) {
                    int expected = 0;
                    for (int r = 0; r < n; r++) expected += value(seed, r, i);
                    assertThat(sum.getAtIndex(JAVA_INT, i)).as("allReduce from sizes %d", i).isEqualTo(expected);
                }
                MemorySegment everyone = a.allocate(4L * k * n);
                c.allGather(mine, everyone, DataType.INT32);
                assertThat(everyone.mismatch(all)).as("allGather from sizes").isEqualTo(-1);
                MemorySegment root = rank == 0 ? ints(a, k, i -> value(seed, 0, i)) : a.allocate(4L * k);
                c.broadcast(root, DataType.INT32, 0);
                for (int i = 0; i < k; i++) assertThat(root.getAtIndex(JAVA_INT, i)).isEqualTo(value(seed, 0, i));
                // one rank's buffer is not a whole number of INT32s: refused on every rank, naming the sizes
                MemorySegment odd = rank == n - 1 ? a.allocate(4L * k + 2) : a.allocate(4L * k);
                Throwable t = catchThrowable(() -> c.allReduce(odd, DataType.INT32, ReduceOp.SUM));
                if (rank == n - 1) {
                    assertThat(t).isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("send holds " + (4L * k + 2) + " bytes, the call needs " + (4L * k + 4));
                } else {
                    assertThat(t).isInstanceOf(CollectiveMismatchException.class)
                            .hasMessageContaining("rank " + (n - 1) + " refused its own arguments: send holds " + (4L * k + 2) + " bytes");
                }
            }
        });
    }

    /** Values of both signs, for a reduction by magnitude. */
    private static int signed(long seed, int rank, int i) {
        int v = value(seed, rank, i);
        return (v & 1) == 0 ? v : -v;
    }

    private static int value(long seed, int rank, int i) {
        return (int) ((seed * 31 + rank * 1_000_003L + i * 7919L) % 100_000);
    }

    private static MemorySegment ints(Arena a, int n, java.util.function.IntUnaryOperator f) {
        MemorySegment m = a.allocate(4L * Math.max(1, n));
        for (int i = 0; i < n; i++) m.setAtIndex(JAVA_INT, i, f.applyAsInt(i));
        return m.asSlice(0, 4L * n);
    }

    private static long[] fill(int n, int k) {
        long[] out = new long[n];
        java.util.Arrays.fill(out, k);
        return out;
    }

    private static long[] blocks(int n, int k) {
        long[] out = new long[n];
        for (int r = 0; r < n; r++) out[r] = (long) r * k;
        return out;
    }
}
