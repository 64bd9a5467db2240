package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * A latency-critical message is not stuck behind a bulk transfer on the same link: two ranks (threads, TCP), rank 0
 * sending 1 GiB to rank 1 on a normal stream while it ping-pongs 4 KiB requests (8-byte replies) with rank 1 on a
 * {@link Stream.Priority#HIGH} stream. A request waits for the chunk being written and what the sockets hold, not for
 * the gigabyte: the median round trip during the transfer must be under a tenth of the transfer's time, both measured
 * in the same run (when the payload went as one frame, a request sent during the transfer waited for all of it: the
 * round trip was the transfer's time). The test prints it against the round trip on the idle link too. Every byte of
 * both is checked.
 */
class PriorityTest {
    private static final long BULK = 1L << 30;
    private static final int REQUEST = 4096;
    /** The median round trip during the transfer is below this share of the transfer's time. */
    private static final double MAX_SHARE = 0.1;

    @Test
    void aHighPrioritySendOvertakesABulkTransferOnTheSameLink() throws Exception {
        double[] result = new double[4];
        Ranks.runThreads(2, Duration.ofMinutes(4), b -> b.transport(CommConfig.Transport.TCP), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            try (Arena a = Arena.ofShared(); Stream bulk = c.newStream(); Stream urgent = c.newStream(Stream.Priority.HIGH)) {
                assertThat(urgent.priority()).isEqualTo(Stream.Priority.HIGH);
                MemorySegment big = a.allocate(BULK, 64);
                MemorySegment request = a.allocate(REQUEST), reply = a.allocate(8);
                if (rank == 0) {
                    for (long i = 0; i < BULK; i += 8) big.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 31 + 7);
                }
                long[] idle = new long[50];
                for (int i = 0; i < idle.length; i++) idle[i] = pingPong(urgent, rank, request, reply, i);
                c.barrier();
                CommFuture<?> transfer = rank == 0 ? bulk.send(big, 1, 7) : bulk.recv(big, 0, 7);
                long[] busy = new long[400];
                int n = 0;
                long start = System.nanoTime();
                // both ranks run the same count: rank 0 decides, from the transfer it started, and tells rank 1 in the reply
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
                    for (long i = 0; i < BULK; i += 8) {
                        long v = big.get(ValueLayout.JAVA_LONG_UNALIGNED, i);
                        if (v != i * 31 + 7) throw new AssertionError("bulk byte " + i + ": " + v);
                    }
                } else {
                    Arrays.sort(idle);
                    long[] during = Arrays.copyOf(busy, n);
                    Arrays.sort(during);
                    assertThat(n).as("round trips during the transfer").isGreaterThanOrEqualTo(5);
                    result[0] = idle[idle.length / 2] / 1e3;
                    result[1] = during[n / 2] / 1e3;
                    result[2] = during[n - 1] / 1e3;
                    result[3] = took / 1e3;
                }
            }
        });
        System.out.printf("PriorityTest: 4 KiB request round trip: idle p50 %.1f us; during a 1 GiB transfer of %.0f ms p50 %.1f us "
                + "(%.1fx the idle p50, %.3f of the transfer), max %.1f us%n", result[0], result[3] / 1e3, result[1],
                result[1] / result[0], result[1] / result[3], result[2]);
        assertThat(result[1] / result[3]).as("median round trip during the transfer / the transfer's time").isLessThan(MAX_SHARE);
    }

    @Test
    void collectivesOnAHighPriorityStreamAreExactBesideANormalOne() throws Exception {
        int count = 2 << 20; // 8 MiB of floats: chunks on both streams at once
        Ranks.runThreads(2, Duration.ofMinutes(2), b -> b.transport(CommConfig.Transport.TCP), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            try (Arena a = Arena.ofShared(); Stream normal = c.newStream(); Stream high = c.newStream(Stream.Priority.HIGH)) {
                MemorySegment in1 = a.allocate(4L * count), out1 = a.allocate(4L * count);
                MemorySegment in2 = a.allocate(4L * count), out2 = a.allocate(4L * count);
                for (int i = 0; i < count; i++) {
                    in1.setAtIndex(ValueLayout.JAVA_FLOAT, i, rank + i % 1000);
                    in2.setAtIndex(ValueLayout.JAVA_FLOAT, i, (rank + 1) * 2 + i % 7);
                }
                for (int round = 0; round < 3; round++) {
                    CommFuture<Void> f1 = normal.allReduce(in1, out1, count, DataType.FLOAT32, ReduceOp.SUM);
                    CommFuture<Void> f2 = high.allReduce(in2, out2, count, DataType.FLOAT32, ReduceOp.MAX);
                    f1.await(Duration.ofMinutes(1));
                    f2.await(Duration.ofMinutes(1));
                    for (int i = 0; i < count; i++) {
                        float sum = out1.getAtIndex(ValueLayout.JAVA_FLOAT, i), max = out2.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                        if (sum != 1f + 2 * (i % 1000) || max != 4f + i % 7) {
                            throw new AssertionError("rank " + rank + " round " + round + " element " + i + ": sum " + sum + ", max " + max);
                        }
                    }
                }
            }
        });
    }

    /** One 4 KiB request from rank 0 and its 8-byte reply, both checked; returns the round trip (rank 0) in ns. */
    private static long pingPong(Stream s, int rank, MemorySegment request, MemorySegment reply, int round) {
        long t0 = System.nanoTime();
        if (rank == 0) {
            request.set(ValueLayout.JAVA_INT, 4, round);
            request.set(ValueLayout.JAVA_BYTE, REQUEST - 1, (byte) round);
            s.send(request, 1, 1).await();
            s.recv(reply, 1, 2).await();
            assertThat(reply.get(ValueLayout.JAVA_LONG_UNALIGNED, 0)).isEqualTo(round * 3L);
        } else {
            s.recv(request, 0, 1).await();
            int got = request.get(ValueLayout.JAVA_INT, 4);
            assertThat(got).isEqualTo(round);
            assertThat(request.get(ValueLayout.JAVA_BYTE, REQUEST - 1)).isEqualTo((byte) round);
            reply.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, got * 3L);
            s.send(reply, 0, 2).await();
        }
        return System.nanoTime() - t0;
    }
}
