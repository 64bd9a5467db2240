package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.comm.TransportProbe;
import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A job that makes and closes communicators keeps the match tables of those it has open only (issue 18): 3 ranks
 * (threads, over TCP, zero copy off so every collective goes through the transport's tables) make 40 rounds of a dup
 * and a split, run collectives and point-to-point on them and close them; at the end each rank's transport holds no
 * more tables than after the first round, and no unexpected messages. A receive still waiting on a communicator that is
 * closed fails, saying so.
 */
class CommunicatorCloseTablesTest {
    @Test
    void closedCommunicatorsLeaveNoMatchTables() throws Exception {
        AtomicInteger checked = new AtomicInteger();
        Ranks.runThreads(3, Duration.ofMinutes(2), b -> b.transport(CommConfig.Transport.TCP).zeroCopy(false), h -> {
            Communicator world = h.world();
            int rank = world.rank();
            long afterFirst = -1;
            for (int round = 0; round < 40; round++) {
                try (Communicator d = world.dup(); Communicator s = world.split(rank % 2, rank)) {
                    float[] v = {rank + round};
                    d.allReduce(v, ReduceOp.SUM);
                    assertThat(v[0]).isEqualTo(3 + 3 * round);
                    s.barrier();
                    int[] one = {round};
                    if (rank == 0) d.send(one, 1, 7);
                    if (rank == 1) {
                        d.recv(one, 0, 7);
                        assertThat(one[0]).isEqualTo(round);
                    }
                    if (round == 39 && rank == 2) {
                        CommFuture<Status> orphan = d.recvAsync(new int[1], 0, 8); // nobody sends it
                        d.close();
                        assertThatThrownBy(() -> orphan.await(Duration.ofSeconds(10))).isInstanceOf(CommAbortedException.class)
                                .hasMessageContaining("was closed");
                    }
                }
                world.barrier(); // every rank closed them before anyone counts
                if (round == 0) afterFirst = TransportProbe.matchState(world)[0];
            }
            long[] state = TransportProbe.matchState(world);
            assertThat(state[0]).as("match tables after 40 rounds (after the first: %d)", afterFirst).isLessThanOrEqualTo(afterFirst);
            assertThat(state[1]).as("unexpected messages held").isZero();
            checked.incrementAndGet();
        });
        assertThat(checked.get()).isEqualTo(3);
    }
}
