package io.hcomm4j.algo;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Topology;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;

/**
 * α and β of one link, measured between two ranks with the public point-to-point calls: a ping-pong of 8 bytes (α is
 * half the best round trip) and a stream of 1 MiB messages (β from the best window), within a time budget that the
 * measuring rank keeps and tells its partner, so both always run the same number of calls. The other ranks wait; every
 * rank gets the measuring rank's figures (a broadcast), so all of them derive the same costs from them. Used by
 * {@code hcomm tune} and, with {@code HCOMM_TUNE_AT_INIT}, by init.
 */
public final class LinkProbe {
    private static final int TAG = 0x7e57;
    private static final long STREAM_MESSAGE = 1L << 20;
    /** Messages of one stream window. */
    private static final int WINDOW = 4;

    private LinkProbe() {
    }

    /** What one probe measured. */
    public record Result(double alphaUs, double gbps) {
        /** As the tuner's cost; the reduction's speed is the kernel's, not the link's: the model's own figure. */
        public Tuner.LinkCost cost() {
            return new Tuner.LinkCost(alphaUs * 1e-6, 1 / (gbps * 1e9), Tuner.LinkCost.TCP_LOOPBACK.gamma());
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "alpha %.1f us (half an 8-byte round trip), %.3f GB/s (1 MiB messages)", alphaUs, gbps);
        }
    }

    /** Rank 0 and the first rank of another host, within {@code budgetNanos}; null on one host. Every rank calls it. */
    public static Result between(Communicator comm, Topology t, long budgetNanos) {
        if (t.hosts() < 2) return null;
        int peer = t.ranksOn(t.hostOf(0) == 0 ? 1 : 0)[0];
        return probe(comm, 0, peer, budgetNanos);
    }

    /** The first two ranks of the first host that has two, within {@code budgetNanos}; null if none has. */
    public static Result within(Communicator comm, Topology t, long budgetNanos) {
        for (int h = 0; h < t.hosts(); h++) {
            int[] on = t.ranksOn(h);
            if (on.length >= 2) return probe(comm, on[0], on[1], budgetNanos);
        }
        return null;
    }

    /**
     * Every rank calls it; {@code a} and {@code b} measure for about {@code budgetNanos} (a third on round trips, the
     * rest on the stream; at least 20 round trips and one message), the others wait. Returns a's figures on every rank.
     */
    public static Result probe(Communicator comm, int a, int b, long budgetNanos) {
        int me = comm.rank();
        double[] res = new double[2];
        comm.barrier();
        if (me == a || me == b) {
            int other = me == a ? b : a;
            try (Arena arena = Arena.ofShared()) {
                MemorySegment small = arena.allocate(8);
                MemorySegment big = arena.allocate(STREAM_MESSAGE);
                long pingEnd = System.nanoTime() + budgetNanos / 3;
                long best = Long.MAX_VALUE;
                // rounds of 20 round trips; a says after each whether another follows (in the message itself)
                for (int round = 0; ; round++) {
                    long t0 = System.nanoTime();
                    long go = 1;
                    for (int i = 0; i < 20; i++) {
                        if (me == a) {
                            small.set(ValueLayout.JAVA_LONG, 0, i < 19 || System.nanoTime() - pingEnd < 0 ? 1 : 0);
                            comm.send(small, other, TAG);
                            comm.recv(small, other, TAG);
                        } else {
                            comm.recv(small, other, TAG);
                            go = small.get(ValueLayout.JAVA_LONG, 0);
                            comm.send(small, other, TAG);
                        }
                    }
                    if (me == a) go = small.get(ValueLayout.JAVA_LONG, 0);
                    // the first round runs the path cold: not counted unless it is the only one
                    if (round > 0 || go == 0) best = Math.min(best, System.nanoTime() - t0);
                    if (go == 0) break;
                }
                res[0] = best / 1e3 / 20 / 2;
                long streamEnd = System.nanoTime() + budgetNanos * 2 / 3;
                long bestStream = Long.MAX_VALUE;
                for (int round = 0; ; round++) {
                    long t0 = System.nanoTime();
                    for (int i = 0; i < WINDOW; i++) {
                        if (me == a) comm.send(big, other, TAG);
                        else comm.recv(big, other, TAG);
                    }
                    // b's acknowledgement ends the window on a's clock, and a's answer says whether another follows
                    long go;
                    if (me == a) {
                        comm.recv(small, other, TAG);
                        small.set(ValueLayout.JAVA_LONG, 0, System.nanoTime() - streamEnd < 0 ? 1 : 0);
                        go = small.get(ValueLayout.JAVA_LONG, 0);
                        comm.send(small, other, TAG);
                    } else {
                        comm.send(small, other, TAG);
                        comm.recv(small, other, TAG);
                        go = small.get(ValueLayout.JAVA_LONG, 0);
                    }
                    bestStream = Math.min(bestStream, System.nanoTime() - t0);
                    if (go == 0) break;
                }
                res[1] = (double) WINDOW * STREAM_MESSAGE / bestStream; // bytes per ns = GB/s
            }
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(16);
            if (me == a) {
                buf.set(ValueLayout.JAVA_DOUBLE, 0, res[0]);
                buf.set(ValueLayout.JAVA_DOUBLE, 8, res[1]);
            }
            comm.broadcast(buf, 2, DataType.FLOAT64, a);
            return new Result(buf.get(ValueLayout.JAVA_DOUBLE, 0), buf.get(ValueLayout.JAVA_DOUBLE, 8));
        }
    }
}
