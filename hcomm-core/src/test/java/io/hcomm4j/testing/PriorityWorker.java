package io.hcomm4j.testing;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Stream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;

/**
 * A high-priority exchange beside a bulk transfer on the same link ({@code PriorityTest} with threads over loopback,
 * {@code NetnsPriorityTest} with processes in network namespaces): rank 0 sends {@code bulk} bytes to rank 1 on a
 * normal stream while the two ping-pong a 4 KiB request and an 8-byte reply on a {@link Stream.Priority#HIGH} stream,
 * after 50 round trips on the idle link. Every byte of the transfer and of every request and reply is checked (a
 * mismatch throws). As a program (two ranks, args: bulk bytes), rank 0 prints {@code PRIORITY idle_us=<p50>
 * busy_us=<p50> max_us=<max> n=<round trips during the transfer> transfer_ms=<its time>} and both print {@code OK}.
 */
public final class PriorityWorker {
    /** Bytes of a request. */
    public static final int REQUEST = 4096;

    /** Rank 0's figures (rank 1's are zero): round trips in microseconds, the transfer's time in milliseconds. */
    public record Result(double idleP50, double busyP50, double busyMax, int busyCount, double transferMs) {
    }

    private PriorityWorker() {
    }

    public static void main(String[] args) throws Exception {
        long bulk = Long.parseLong(args[0]);
        try (Hcomm hcomm = Hcomm.init()) {
            Result r = measure(hcomm.world(), bulk);
            if (hcomm.world().rank() == 0) {
                System.out.printf(java.util.Locale.ROOT, "PRIORITY idle_us=%.1f busy_us=%.1f max_us=%.1f n=%d transfer_ms=%.1f%n",
                        r.idleP50(), r.busyP50(), r.busyMax(), r.busyCount(), r.transferMs());
            }
            System.out.println("OK");
        }
    }

    /** Runs the exchange on {@code c} (two ranks; both call it). */
    public static Result measure(Communicator c, long bulk) {
        int rank = c.rank();
        try (Arena a = Arena.ofShared(); Stream normal = c.newStream(); Stream urgent = c.newStream(Stream.Priority.HIGH)) {
            if (urgent.priority() != Stream.Priority.HIGH) throw new AssertionError("stream priority " + urgent.priority());
            MemorySegment big = a.allocate(bulk, 64);
            MemorySegment request = a.allocate(REQUEST), reply = a.allocate(8);
            if (rank == 0) {
                for (long i = 0; i < bulk; i += 8) big.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 31 + 7);
            }
            long[] idle = new long[50];
            for (int i = 0; i < idle.length; i++) idle[i] = pingPong(urgent, rank, request, reply, i);
            c.barrier();
            CommFuture<?> transfer = rank == 0 ? normal.send(big, 1, 7) : normal.recv(big, 0, 7);
            long[] busy = new long[400];
            int n = 0;
            long start = System.nanoTime();
            // both ranks run the same count: rank 0 decides, from the transfer it started, and tells rank 1 in the request
            boolean more = true;
            while (more && n < busy.length) {
                if (rank == 0) {
                    more = !transfer.isDone() && System.nanoTime() - start < 60_000_000_000L;
                    request.set(ValueLayout.JAVA_INT, 0, more ? 1 : 0);
                }
                long t = pingPong(urgent, rank, request, reply, 1000 + n);
                if (rank == 1) more = request.get(ValueLayout.JAVA_INT, 0) == 1;
                if (more) busy[n++] = t;
            }
            transfer.await(Duration.ofMinutes(2));
            long took = System.nanoTime() - start;
            if (rank == 1) {
                for (long i = 0; i < bulk; i += 8) {
                    long v = big.get(ValueLayout.JAVA_LONG_UNALIGNED, i);
                    if (v != i * 31 + 7) throw new AssertionError("bulk byte " + i + ": " + v);
                }
                return new Result(0, 0, 0, n, 0);
            }
            if (n < 5) throw new AssertionError("only " + n + " round trips during the transfer");
            Arrays.sort(idle);
            long[] during = Arrays.copyOf(busy, n);
            Arrays.sort(during);
            return new Result(idle[idle.length / 2] / 1e3, during[n / 2] / 1e3, during[n - 1] / 1e3, n, took / 1e6);
        }
    }

    /** One 4 KiB request from rank 0 and its 8-byte reply, both checked; returns the round trip (rank 0) in ns. */
    private static long pingPong(Stream s, int rank, MemorySegment request, MemorySegment reply, int round) {
        long t0 = System.nanoTime();
        if (rank == 0) {
            request.set(ValueLayout.JAVA_INT, 4, round);
            request.set(ValueLayout.JAVA_BYTE, REQUEST - 1, (byte) round);
            s.send(request, 1, 1).await();
            s.recv(reply, 1, 2).await();
            long got = reply.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
            if (got != round * 3L) throw new AssertionError("reply " + round + ": " + got);
        } else {
            s.recv(request, 0, 1).await();
            int got = request.get(ValueLayout.JAVA_INT, 4);
            if (got != round || request.get(ValueLayout.JAVA_BYTE, REQUEST - 1) != (byte) round) {
                throw new AssertionError("request " + round + ": " + got);
            }
            reply.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, got * 3L);
            s.send(reply, 0, 2).await();
        }
        return System.nanoTime() - t0;
    }
}
