package io.hcomm4j.algo;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The zero-copy loops on their own, every rank's part run in turn in one thread over ordinary segments: slices cover
 * every element once and start on 128-byte boundaries; the parts of all ranks together give every rank the reduction
 * in rank order (bit for bit what the kernels compute), in place or not, with a scratch chunk smaller than a slice;
 * reduce-scatter, all-gather and split broadcast put every byte where it belongs.
 */
class ZeroCopyCollectivesUnitTest {
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);
    @Test
    void slicesCoverEveryElementOnceAligned() {
        for (int es : new int[] {1, 2, 4, 8}) {
            for (int n = 1; n <= 9; n++) {
                for (long count : new long[] {0, 1, 2, 31, 32, 33, 127, 1000, 4097, 100_003}) {
                    long prev = 0;
                    assertThat(ZeroCopyCollectives.sliceStart(count, n, 0, es)).isZero();
                    for (int r = 1; r <= n; r++) {
                        long s = ZeroCopyCollectives.sliceStart(count, n, r, es);
                        assertThat(s).as("es %d n %d count %d r %d", es, n, count, r).isBetween(prev, count);
                        if (s < count) assertThat(s * es % 128).isZero();
                        prev = s;
                    }
                    assertThat(ZeroCopyCollectives.sliceStart(count, n, n, es)).isEqualTo(count);
                }
            }
        }
    }

    @Test
    void allReducePartsMakeTheRankOrderReduction() {
        Random rnd = new Random(7);
        try (Arena arena = Arena.ofConfined()) {
            for (DataType t : DataType.values()) {
                for (ReduceOp op : COLLECTIVE_OPS) {
                    if (!op.accepts(t)) continue; // BAND on floats, AVG on BOOL: refused (SmallTypesCollectivesTest)
                    int n = 2 + rnd.nextInt(4);
                    long count = 1 + rnd.nextInt(5000);
                    boolean inPlace = rnd.nextBoolean();
                    int es = t.byteSize();
                    ReduceKernel k = ReduceKernel.of(t, op);
                    MemorySegment[] send = new MemorySegment[n];
                    MemorySegment[] recv = new MemorySegment[n];
                    MemorySegment[] orig = new MemorySegment[n];
                    long[] sendOff = new long[n];
                    long[] recvOff = new long[n];
                    for (int r = 0; r < n; r++) {
                        orig[r] = arena.allocate(count * es);
                        for (long b = 0; b < count * es; b++) orig[r].set(ValueLayout.JAVA_BYTE, b, (byte) rnd.nextInt(op == ReduceOp.PROD ? 3 : 256));
                        send[r] = arena.allocate(count * es + 64);
                        sendOff[r] = 8 * rnd.nextInt(8);
                        MemorySegment.copy(orig[r], 0, send[r], sendOff[r], count * es);
                        recv[r] = inPlace ? send[r] : arena.allocate(count * es + 64);
                        recvOff[r] = inPlace ? sendOff[r] : 8 * rnd.nextInt(8);
                    }
                    MemorySegment want = arena.allocate(count * es);
                    k.combine(orig[0], 0, orig[1], 0, want, 0, count);
                    for (int r = 2; r < n; r++) k.accumulate(want, 0, orig[r], 0, count);
                    int avg = op == ReduceOp.AVG ? n : 1;
                    k.finish(want, 0, count, avg);
                    MemorySegment scratch = arena.allocate(256); // several chunks per slice
                    for (int r = 0; r < n; r++) ZeroCopyCollectives.allReduce(send, sendOff, recv, recvOff, r, n, count, k, avg, scratch);
                    for (int r = 0; r < n; r++) {
                        assertThat(recv[r].asSlice(recvOff[r], count * es).mismatch(want)).as("%s %s n %d rank %d inPlace %s", t, op, n, r, inPlace).isEqualTo(-1);
                    }
                }
            }
        }
    }

    /** Slices large enough for streaming chunks (each copy at least 2.5 MB) go through the big scratch, uneven tails too. */
    @Test
    void largeSlicesGoThroughStreamingChunks() {
        try (Arena arena = Arena.ofConfined()) {
            int n = 3;
            long count = 5_000_011; // float32: 20 MB, slices of ~6.7 MB: two or three chunks each
            ReduceKernel k = ReduceKernel.of(DataType.FLOAT32, ReduceOp.SUM);
            MemorySegment[] send = new MemorySegment[n];
            MemorySegment[] recv = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                send[r] = arena.allocate(count * 4);
                for (long i = 0; i < count; i++) send[r].setAtIndex(ValueLayout.JAVA_FLOAT, i, (i % 1000) * (r + 1));
                recv[r] = arena.allocate(count * 4);
            }
            MemorySegment big = arena.allocate(2 * (ZeroCopyCollectives.STREAMING_COPY_MIN + 4096) + 4096);
            for (int r = 0; r < n; r++) {
                ZeroCopyCollectives.allReduce(send, new long[n], recv, new long[n], r, n, count, k, 1, arena.allocate(4096), big);
            }
            for (int r = 0; r < n; r++) {
                for (long i = 0; i < count; i++) {
                    if (recv[r].getAtIndex(ValueLayout.JAVA_FLOAT, i) != (i % 1000) * 6f) throw new AssertionError("rank " + r + " element " + i);
                }
            }
            MemorySegment out = arena.allocate(count * 4);
            ZeroCopyCollectives.reduceScatter(send, new long[n], n, 0, count, out, 0, k, 1, arena.allocate(4096), big);
            assertThat(out.mismatch(recv[0])).isEqualTo(-1);
        }
    }

    @Test
    void reduceScatterAllGatherAndSplitBroadcastPutEveryByteInPlace() {
        try (Arena arena = Arena.ofConfined()) {
            int n = 3;
            long[] counts = {5, 0, 1001};
            long total = 1006;
            ReduceKernel k = ReduceKernel.of(DataType.INT32, ReduceOp.SUM);
            MemorySegment[] send = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                send[r] = arena.allocate(total * 4);
                for (long i = 0; i < total; i++) send[r].setAtIndex(ValueLayout.JAVA_INT, i, (int) (i * 10 + r));
            }
            long from = 0;
            for (int r = 0; r < n; r++) {
                MemorySegment out = arena.allocate(Math.max(1, counts[r] * 4));
                ZeroCopyCollectives.reduceScatter(send, new long[n], n, from, from + counts[r], out, 0, k, 1, arena.allocate(64));
                for (long i = 0; i < counts[r]; i++) assertThat(out.getAtIndex(ValueLayout.JAVA_INT, i)).isEqualTo((int) ((from + i) * 30 + 3));
                from += counts[r];
            }
            // all-gather of blocks of different sizes at displacements
            long[] off = {3, 100, 10};
            long[] len = {7, 0, 90};
            MemorySegment[] blocks = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                blocks[r] = arena.allocate(Math.max(1, len[r]));
                for (long i = 0; i < len[r]; i++) blocks[r].set(ValueLayout.JAVA_BYTE, i, (byte) (r * 50 + i));
            }
            for (int r = 0; r < n; r++) {
                MemorySegment recv = arena.allocate(100);
                MemorySegment.copy(blocks[r], 0, recv, off[r], len[r]);
                ZeroCopyCollectives.allGather(blocks, new long[n], r, n, recv, 0, off, len);
                for (int q = 0; q < n; q++) {
                    for (long i = 0; i < len[q]; i++) assertThat(recv.get(ValueLayout.JAVA_BYTE, off[q] + i)).isEqualTo((byte) (q * 50 + i));
                }
            }
            // split broadcast from rank 1: every rank's share lands in every non-root buffer
            long bytes = 70_001;
            MemorySegment[] buf = new MemorySegment[n];
            for (int r = 0; r < n; r++) buf[r] = arena.allocate(bytes);
            for (long i = 0; i < bytes; i++) buf[1].set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7));
            for (int r = 0; r < n; r++) ZeroCopyCollectives.broadcastSplit(buf, new long[n], r, n, 1, bytes);
            for (int r = 0; r < n; r++) assertThat(buf[r].mismatch(buf[1])).isEqualTo(-1);
        }
    }
}
