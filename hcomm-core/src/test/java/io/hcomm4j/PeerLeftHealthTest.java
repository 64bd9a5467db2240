package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A member that closes its session in order is gone as surely as one that crashed: the others' communicators turn
 * DEGRADED naming it ("rank 2 closed its session", not "failed"), a later collective that needs it fails with that
 * reason (at once: no timeout is waited for), what it sent before closing is still delivered, point-to-point among the others and communicators without it
 * go on, and {@code shrink} leaves it out. Nothing here waits for a timeout: HCOMM_TIMEOUT is a minute, every wait ends
 * when the state it waits for is reached.
 */
class PeerLeftHealthTest {
    @ParameterizedTest
    @ValueSource(ints = {3, 5})
    void aMemberThatClosesInOrderMakesTheOthersDegraded(int n) throws Exception {
        int leaver = n - 1;
        long seed = 17L * n;
        Map<Integer, List<String>> seen = new ConcurrentHashMap<>();
        Ranks.runThreads(n, Duration.ofSeconds(120), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            List<String> changes = new CopyOnWriteArrayList<>();
            if (rank == leaver) seen.put(rank, changes);
            c.addHealthListener(health -> changes.add(health.state() + " " + health.failedRanks() + " " + health.reason()));
            // the ranks other than the leaver, split off before it goes
            Communicator stayers = c.split(rank == leaver ? -1 : 0, rank);
            int[] sum = new int[64];
            for (int i = 0; i < sum.length; i++) sum[i] = rank * 1000 + i;
            c.allReduce(sum, ReduceOp.SUM);
            for (int i = 0; i < sum.length; i++) assertThat(sum[i]).isEqualTo(1000 * n * (n - 1) / 2 + n * i);
            if (rank == leaver) {
                long[] last = new Random(seed).longs(32).toArray();
                c.send(last, 0, 3); // eager: delivered even though this rank is gone when rank 0 receives it
                return;
            }
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(5))
                    .until(() -> c.health().state() != Health.State.READY);
            Health health = c.health();
            assertThat(health.state()).as("rank %d", rank).isEqualTo(Health.State.DEGRADED);
            assertThat(health.failedRanks()).as("rank %d", rank).containsExactly(leaver);
            assertThat(health.reason()).as("rank %d", rank).isEqualTo("rank " + leaver + " closed its session");

            // a collective still runs (the member may have left its part behind), and fails where it needs the member
            assertThatThrownBy(() -> c.allReduce(new float[8], ReduceOp.SUM)).isInstanceOfSatisfying(PeerFailedException.class, e -> {
                assertThat(e.failedRanks()).contains(leaver);
                assertThat(e.getMessage()).startsWith("rank " + rank + ": allReduce (collective #").contains(" on a communicator of " + n
                        + " ranks cannot complete: ").contains("rank " + leaver + " closed its session");
            });
            if (rank == 0) {
                long[] last = new long[32];
                c.recv(last, leaver, 3);
                assertThat(last).containsExactly(new Random(seed).longs(32).toArray());
            }
            assertThat(stayers.health()).isEqualTo(Health.READY);
            long[] b = new long[1000];
            if (rank == 0) for (int i = 0; i < b.length; i++) b[i] = seed * i;
            stayers.broadcast(b, 0);
            for (int i = 0; i < b.length; i++) assertThat(b[i]).isEqualTo(seed * i);
            int next = (rank + 1) % (n - 1);
            int prev = (rank + n - 2) % (n - 1);
            int[] got = new int[4];
            CommFuture<Status> r = c.recvAsync(got, prev, 9);
            c.send(new int[] {rank, rank, rank, rank}, next, 9);
            r.await();
            assertThat(got).containsOnly(prev);
            try (Communicator shrunk = c.shrink()) {
                assertThat(shrunk.size()).isEqualTo(n - 1);
                double[] d = {rank, 1};
                shrunk.allReduce(d, ReduceOp.SUM);
                assertThat(d).containsExactly((n - 1) * (n - 2) / 2.0, n - 1);
            }
            // what the listener saw, before any other rank closes (which it would see too)
            await().atMost(Duration.ofSeconds(60)).until(() -> !changes.isEmpty());
            seen.put(rank, List.copyOf(changes));
            stayers.barrier();
            stayers.close();
        });
        for (int r = 0; r < n - 1; r++) {
            assertThat(seen.get(r)).as("rank %d health changes", r)
                    .containsExactly("DEGRADED [" + leaver + "] rank " + leaver + " closed its session");
        }
        assertThat(seen.get(leaver)).as("the leaver's own communicator").isEmpty();
    }
}
