package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.PriorityWorker;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
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
@Tag("serial")
class PriorityTest {
    private static final long BULK = 1L << 30;
    /** The median round trip during the transfer is below this share of the transfer's time. */
    private static final double MAX_SHARE = 0.1;

    @Test
    void aHighPrioritySendOvertakesABulkTransferOnTheSameLink() throws Exception {
        PriorityWorker.Result[] result = new PriorityWorker.Result[1];
        Ranks.runThreads(2, Duration.ofMinutes(4), b -> b.transport(CommConfig.Transport.TCP), h -> {
            PriorityWorker.Result r = PriorityWorker.measure(h.world(), BULK);
            if (h.world().rank() == 0) result[0] = r;
        });
        PriorityWorker.Result r = result[0];
        System.out.printf("PriorityTest: 4 KiB request round trip: idle p50 %.1f us; during a 1 GiB transfer of %.0f ms p50 %.1f us "
                + "(%.1fx the idle p50, %.3f of the transfer), max %.1f us%n", r.idleP50(), r.transferMs(), r.busyP50(),
                r.busyP50() / r.idleP50(), r.busyP50() / 1e3 / r.transferMs(), r.busyMax());
        assertThat(r.busyP50() / 1e3 / r.transferMs()).as("median round trip during the transfer / the transfer's time").isLessThan(MAX_SHARE);
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
}
