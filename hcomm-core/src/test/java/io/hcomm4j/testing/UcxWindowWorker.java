package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Window;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;

/**
 * One rank of UcxTransportTest's mixed-road window job (a separate JVM, HCOMM_TRANSPORT=ucx): fetch-and-adds (UCX's
 * atomics where UCX has them natively) and accumulates (the target's progress engine) on one word of rank 0, 32- and
 * 64-bit, whose sum must be exact; then every rank writes its stripe of every other rank's block in seeded random
 * pieces from native memory (UCX's RMA) and heap arrays (the frames), reading each piece back at once with no flush
 * between (ops keep their order across the roads), and after a fence every rank reads every block whole. Prints
 * {@code rank <r> MIX OK} and how many one-sided ops went through UCX. Argument: the rounds of the first part.
 */
public final class UcxWindowWorker {
    private static final int BLOCK = 1 << 20;

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        try (Hcomm hcomm = Hcomm.init(); Arena a = Arena.ofShared()) {
            Communicator c = hcomm.world();
            int n = c.size();
            int rank = c.rank();
            try (Window w = c.allocateWindow(BLOCK)) {
                MemorySegment one = a.allocate(8);
                one.set(ValueLayout.JAVA_LONG, 0, 1);
                MemorySegment oneInt = a.allocate(4);
                oneInt.set(ValueLayout.JAVA_INT, 0, 1);
                w.lockAll();
                for (int i = 0; i < rounds; i++) {
                    if (i % 2 == 0) {
                        w.fetchAndOpAsync(1, 0, 0, DataType.INT64, ReduceOp.SUM);
                        w.fetchAndOpAsync(1, 0, 8, DataType.INT32, ReduceOp.SUM);
                    } else {
                        w.accumulateAsync(one, 0, 0, DataType.INT64, ReduceOp.SUM);
                        w.accumulateAsync(oneInt, 0, 8, DataType.INT32, ReduceOp.SUM);
                    }
                }
                w.flushAll();
                w.unlockAll();
                w.fence();
                expect(w.fetchAndOp(0, 0, 0, DataType.INT64, ReduceOp.NO_OP) == (long) n * rounds, "64-bit sum at rank 0");
                expect(w.fetchAndOp(0, 0, 8, DataType.INT32, ReduceOp.NO_OP) == (long) n * rounds, "32-bit sum at rank 0");
                w.fence();
                Random rnd = new Random(2005 + rank);
                int stripe = BLOCK / n;
                for (int t = 0; t < n; t++) {
                    if (t == rank) continue;
                    for (int off = 0; off < stripe; ) {
                        int len = Math.min(stripe - off, 1 + rnd.nextInt(64 << 10));
                        byte[] bytes = pattern(rank, t, off, len);
                        MemorySegment src = rnd.nextBoolean() ? MemorySegment.ofArray(bytes) : a.allocate(len).copyFrom(MemorySegment.ofArray(bytes));
                        long at = (long) rank * stripe + off;
                        w.put(src, t, at);
                        MemorySegment back = rnd.nextBoolean() ? MemorySegment.ofArray(new byte[len]) : a.allocate(len);
                        w.get(back, t, at); // no flush between: the get sees the put
                        expect(Arrays.equals(back.toArray(ValueLayout.JAVA_BYTE), bytes), "rank " + rank + " reads back its put to rank " + t + " at " + at);
                        off += len;
                    }
                }
                w.fence();
                for (int t = 0; t < n; t++) {
                    MemorySegment all = a.allocate(BLOCK);
                    w.get(all, t, 0);
                    w.flush(t);
                    for (int o = 0; o < n; o++) {
                        if (o == t) continue;
                        expect(Arrays.equals(all.asSlice((long) o * stripe, stripe).toArray(ValueLayout.JAVA_BYTE), pattern(o, t, 0, stripe)),
                                "rank " + o + "'s stripe in rank " + t + "'s block, read by rank " + rank);
                    }
                }
                w.fence();
            }
            System.out.printf("rank %d UCX ONE-SIDED OPS %d%n", rank, io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(c)[2]);
            System.out.printf("rank %d MIX OK%n", rank);
            Ranks.printTransports(hcomm);
            c.barrier();
        }
    }

    /** Bytes rank {@code from} writes into rank {@code to}'s block: a function of both and the position. */
    static byte[] pattern(int from, int to, int off, int len) {
        byte[] b = new byte[len];
        for (int i = 0; i < len; i++) b[i] = (byte) ((off + i) * 31 + from * 7 + to * 13 + ((off + i) >>> 8));
        return b;
    }

    private static void expect(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }
}
