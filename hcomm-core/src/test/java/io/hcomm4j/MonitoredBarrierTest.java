package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code monitoredBarrier(timeout)}: with every rank on time it returns everywhere, again and again, on 1 to 8 ranks;
 * with ranks late, every rank throws the same verdict naming them (the late ones when they come), and then the
 * communicator goes on: collectives, and the next monitored barrier.
 */
class MonitoredBarrierTest {
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 2, 4, 8})
    void everyRankOnTimePassesRepeatedly(int n) throws Exception {
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            for (int i = 0; i < 5; i++) {
                c.monitoredBarrier(Duration.ofSeconds(30));
                int[] x = {1};
                c.allReduce(x, ReduceOp.SUM);
                assertThat(x[0]).isEqualTo(n);
            }
            assertThatThrownBy(() -> c.monitoredBarrier(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("rank " + c.rank() + ": monitoredBarrier: timeout must be > 0, was 0 ms");
        });
    }

    @Test
    void lateRanksAreNamedOnEveryRankAndTheCommunicatorGoesOn() throws Exception {
        Map<Integer, String> verdicts = new ConcurrentHashMap<>();
        Ranks.runThreads(4, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            c.barrier();
            if (rank >= 2) sleep(3_000); // busy in its own code past the 1 s timeout
            Throwable t = catchThrowable(() -> c.monitoredBarrier(Duration.ofSeconds(1)));
            assertThat(t).as("rank %d", rank).isInstanceOf(CommTimeoutException.class);
            verdicts.put(rank, t.getMessage());
            long[] x = {rank};
            c.allReduce(x, ReduceOp.SUM);
            assertThat(x[0]).isEqualTo(6);
            c.monitoredBarrier(Duration.ofSeconds(30));
        });
        for (int r = 0; r < 4; r++) {
            assertThat(verdicts.get(r)).as("rank %d", r).isEqualTo("rank " + r + ": monitoredBarrier #1: ranks [2, 3] have not "
                    + "arrived within 1.0 s (1 of the other 3 ranks did); rank 0 timed it");
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
