package io.hcomm4j.cli;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.Status;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Point-to-point measurements, shared by {@code hcomm perf p2p} and {@code hcomm demo}. Buffers are
 * off-heap ({@link Arena#ofShared()}: the library's threads read and write them) and allocated once per
 * measurement, outside the timed loop. Times are medians over iterations, taken with {@link System#nanoTime()}.
 *
 * <ul>
 *   <li>{@link #pingpong}: rank 0 sends, rank 1 echoes; time = round trip / 2 (one-way latency).</li>
 *   <li>{@link #stream}: rank 0 sends a window of messages back to back, rank 1 receives them and
 *       acknowledges the window with one small message (OSU-style unidirectional bandwidth);
 *       time = window time / window size.</li>
 *   <li>{@link #ring}: every rank sends to rank+1 and receives from rank-1 at the same time
 *       (nccl-tests' sendrecv); time = the step time this rank saw.</li>
 * </ul>
 *
 * With {@code check}, one more exchange after the timed loop goes into zeroed buffers and every byte is compared
 * with the pattern the sender wrote; the result counts the wrong bytes (rank 0: of ranks 0 and 1).
 */
final class P2pBench {
    static final int TAG_PINGPONG = 101;
    static final int TAG_STREAM = 102;
    static final int TAG_ACK = 103;
    static final int TAG_CHECK = 104;
    static final int TAG_RESULT = 105;
    static final int TAG_RING = 106;
    /** The JIT warm-up's "another round" flag from rank 0 to rank 1. */
    static final int TAG_WARMUP = 107;

    private static final long ALIGN = 4096;

    private P2pBench() {
    }

    /**
     * What one measurement gave this rank.
     *
     * @param bytes      message size
     * @param iterations timed iterations (round trips, windows or ring steps)
     * @param timeUs     time per message in microseconds (median; see the class comment)
     * @param wrong      wrong bytes found by the check, or -1 when not checked
     * @param tailsUs    p50, p99 and max of the same time per message over the timed iterations ({@link PerfReport#tailsUs})
     */
    record Result(long bytes, int iterations, double timeUs, long wrong, double[] tailsUs) {
        /** A result without per-iteration figures. */
        Result(long bytes, int iterations, double timeUs, long wrong) {
            this(bytes, iterations, timeUs, wrong, null);
        }

        /** Bytes per second of one message, in GB/s (1e9 B/s). */
        double algbwGBs() {
            return timeUs > 0 ? bytes / (timeUs * 1e3) : 0;
        }
    }

    /** Ping-pong between ranks 0 and 1 (only they call it). */
    static Result pingpong(Communicator comm, long bytes, int iters, int warmup, boolean check) {
        int rank = requireRank01(comm);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment send = arena.allocate(bytes, ALIGN);
            MemorySegment recv = arena.allocate(bytes, ALIGN);
            fill(send, 0);
            long[] roundTrips = new long[iters];
            for (int i = -warmup; i < iters; i++) {
                if (rank == 0) {
                    long t0 = System.nanoTime();
                    comm.send(send, 1, TAG_PINGPONG);
                    comm.recv(recv, 1, TAG_PINGPONG);
                    long dt = System.nanoTime() - t0;
                    if (i >= 0) roundTrips[i] = dt;
                } else {
                    comm.recv(recv, 0, TAG_PINGPONG);
                    comm.send(recv, 0, TAG_PINGPONG);
                }
            }
            long wrong = check ? checkRound(comm, arena, send, recv, true) : -1;
            return new Result(bytes, iters, median(roundTrips) / 2e3, wrong, PerfReport.tailsUs(roundTrips, 2));
        }
    }

    /** Windowed streaming from rank 0 to rank 1 (only they call it). */
    static Result stream(Communicator comm, long bytes, int window, int reps, int warmup, boolean check) {
        int rank = requireRank01(comm);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment send = arena.allocate(bytes, ALIGN);
            MemorySegment recv = arena.allocate(bytes, ALIGN);
            MemorySegment ack = arena.allocate(8);
            fill(send, 0);
            CommFuture<?>[] ops = new CommFuture<?>[window];
            long[] windows = new long[reps];
            for (int i = -warmup; i < reps; i++) {
                long t0 = System.nanoTime();
                if (rank == 0) {
                    for (int w = 0; w < window; w++) ops[w] = comm.sendAsync(send, 1, TAG_STREAM);
                    for (CommFuture<?> op : ops) op.await();
                    comm.recv(ack, 1, TAG_ACK);
                } else {
                    for (int w = 0; w < window; w++) ops[w] = comm.recvAsync(recv, 0, TAG_STREAM);
                    for (CommFuture<?> op : ops) op.await();
                    comm.send(ack, 0, TAG_ACK);
                }
                long dt = System.nanoTime() - t0;
                if (i >= 0) windows[i] = dt;
            }
            long wrong = check ? checkRound(comm, arena, send, recv, false) : -1;
            return new Result(bytes, reps, median(windows) / window / 1e3, wrong, PerfReport.tailsUs(windows, window));
        }
    }

    /** Ring exchange on every rank of {@code comm}: send to rank+1 and receive from rank-1 together. */
    static Result ring(Communicator comm, long bytes, int iters, int warmup, boolean check) {
        int rank = comm.rank();
        int size = comm.size();
        int next = (rank + 1) % size;
        int prev = (rank + size - 1) % size;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment send = arena.allocate(bytes, ALIGN);
            MemorySegment recv = arena.allocate(bytes, ALIGN);
            fill(send, rank);
            long[] steps = new long[iters];
            for (int i = -warmup; i < iters; i++) {
                long t0 = System.nanoTime();
                CommFuture<Status> r = comm.recvAsync(recv, prev, TAG_RING);
                CommFuture<Void> s = comm.sendAsync(send, next, TAG_RING);
                s.await();
                r.await();
                long dt = System.nanoTime() - t0;
                if (i >= 0) steps[i] = dt;
            }
            long wrong = -1;
            if (check) {
                recv.fill((byte) 0);
                CommFuture<Status> r = comm.recvAsync(recv, prev, TAG_CHECK);
                comm.sendAsync(send, next, TAG_CHECK).await();
                MemorySegment expected = arena.allocate(bytes, ALIGN);
                fill(expected, prev);
                wrong = countWrong(recv, expected, r.await().bytes());
            }
            return new Result(bytes, iters, median(steps) / 1e3, wrong, PerfReport.tailsUs(steps, 1));
        }
    }

    /**
     * One exchange into zeroed buffers: rank 0 sends {@code send}; rank 1 checks what it got and, with
     * {@code echo}, sends it back for rank 0 to check. Rank 0 returns the wrong bytes of both.
     */
    private static long checkRound(Communicator comm, Arena arena, MemorySegment send, MemorySegment recv, boolean echo) {
        MemorySegment count = arena.allocate(8);
        recv.fill((byte) 0);
        if (comm.rank() == 0) {
            comm.send(send, 1, TAG_CHECK);
            long wrong = 0;
            if (echo) wrong += countWrong(recv, send, comm.recv(recv, 1, TAG_CHECK).bytes());
            comm.recv(count, 1, TAG_RESULT);
            return wrong + count.get(JAVA_LONG, 0);
        }
        long wrong = countWrong(recv, send, comm.recv(recv, 0, TAG_CHECK).bytes());
        if (echo) comm.send(recv, 0, TAG_CHECK);
        count.set(JAVA_LONG, 0, wrong);
        comm.send(count, 0, TAG_RESULT);
        return wrong;
    }

    private static int requireRank01(Communicator comm) {
        int rank = comm.rank();
        if (rank > 1 || comm.size() < 2) {
            throw new IllegalStateException("point-to-point measurements run on ranks 0 and 1 of at least 2, not on rank "
                    + rank + " of " + comm.size());
        }
        return rank;
    }

    /** The byte a sender with {@code salt} writes at {@code index}: a hash, so displaced data shows. */
    static byte pattern(long index, long salt) {
        long x = (index + 1 + (salt << 40)) * 0x9E3779B97F4A7C15L;
        return (byte) (x >>> 56);
    }

    /** Writes {@link #pattern} into every byte of {@code seg}. */
    static void fill(MemorySegment seg, long salt) {
        long n = seg.byteSize();
        for (long i = 0; i < n; i++) seg.set(JAVA_BYTE, i, pattern(i, salt));
    }

    /**
     * Bytes of {@code expected} that {@code got} does not hold: the ones that differ among the first
     * {@code receivedBytes}, plus the ones that never arrived.
     */
    static long countWrong(MemorySegment got, MemorySegment expected, long receivedBytes) {
        long n = expected.byteSize();
        long limit = Math.min(Math.max(receivedBytes, 0), n);
        long wrong = n - limit;
        long from = MemorySegment.mismatch(got, 0, limit, expected, 0, limit);
        if (from < 0) return wrong;
        for (long i = from; i < limit; i++) {
            if (got.get(JAVA_BYTE, i) != expected.get(JAVA_BYTE, i)) wrong++;
        }
        return wrong;
    }

    /** Median of {@code values} (mean of the middle two for an even count); 0 for none. */
    static double median(long[] values) {
        if (values.length == 0) return 0;
        long[] v = values.clone();
        Arrays.sort(v);
        int m = v.length / 2;
        return v.length % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2.0;
    }

    /** {@code 8 B}, {@code 4 KiB}, {@code 64 MiB}, or bytes when not a whole number of KiB/MiB/GiB. */
    static String human(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) return (bytes >> 30) + " GiB";
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) return (bytes >> 20) + " MiB";
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) return (bytes >> 10) + " KiB";
        return bytes + " B";
    }
}
