package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.testing.Ranks;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code newGroup(ranks)} and {@code store()} on 1 to 8 ranks: a group of a seeded random subset, in a seeded random
 * order, ranks its members as listed and reduces right; non-members get null; a rank that passes another list is named
 * on every rank; a bad list fails on every rank. The application's store: values, counters, compare-and-set, delete,
 * seen alike from every rank, and kept apart from the library's own keys.
 */
class NewGroupAndStoreTest {
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 2, 3, 5, 8})
    void groupsOfListedRanks(int n) throws Exception {
        long seed = 4242L + n;
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            Random random = new Random(seed); // the same list on every rank
            List<Integer> all = new ArrayList<>();
            for (int r = 0; r < n; r++) all.add(r);
            java.util.Collections.shuffle(all, random);
            int members = 1 + random.nextInt(n);
            int[] list = all.subList(0, members).stream().mapToInt(Integer::intValue).toArray();
            int index = all.subList(0, members).indexOf(rank);
            try (Communicator g = c.newGroup(list)) {
                if (index < 0) {
                    assertThat(g).as("rank %d is not in %s", rank, all.subList(0, members)).isNull();
                } else {
                    assertThat(g.size()).isEqualTo(members);
                    assertThat(g.rank()).isEqualTo(index);
                    long[] x = {rank, 1};
                    g.allReduce(x, ReduceOp.SUM);
                    long sum = 0;
                    for (int r : list) sum += r;
                    assertThat(x).containsExactly(sum, members);
                }
            }
            if (n > 1) {
                // rank 1 lists the ranks in another order: every rank is told, naming it
                int[] other = list.clone();
                if (rank == 1) {
                    other = new int[n];
                    for (int r = 0; r < n; r++) other[r] = n - 1 - r;
                    if (java.util.Arrays.equals(other, list)) other = java.util.Arrays.copyOf(other, 1);
                }
                int[] mine = other;
                Throwable t = catchThrowable(() -> c.newGroup(mine));
                assertThat(t).isInstanceOf(CollectiveMismatchException.class)
                        .hasMessage("rank " + rank + ": newGroup: rank 1 passed a different list of ranks than rank 0");
            }
            Throwable bad = catchThrowable(() -> c.newGroup(0, 0));
            assertThat(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage(n == 1 ? "rank 0: newGroup: rank 0 is listed twice" : "rank " + rank + ": newGroup: rank 0 is listed twice");
            // the world goes on
            int[] y = {1};
            c.allReduce(y, ReduceOp.SUM);
            assertThat(y[0]).isEqualTo(n);
        });
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 3, 8})
    void theApplicationsStore(int n) throws Exception {
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            KeyValueStore store = c.store();
            if (rank == 0) store.setString("model/path", "/models/gpt-" + n + ".bin");
            assertThat(store.getString("model/path", Duration.ofSeconds(30))).isEqualTo("/models/gpt-" + n + ".bin");
            store.set("rank/" + rank, new byte[] {(byte) rank});
            List<String> keys = new ArrayList<>();
            for (int r = 0; r < n; r++) keys.add("rank/" + r);
            store.await(keys, Duration.ofSeconds(30));
            for (int r = 0; r < n; r++) assertThat(store.tryGet("rank/" + r)).containsExactly((byte) r);
            long after = store.add("arrivals", 1);
            assertThat(after).isBetween(1L, (long) n);
            c.barrier();
            assertThat(store.add("arrivals", 0)).isEqualTo(n);
            // exactly one rank wins the compare-and-set
            byte[] mine = ("leader " + rank).getBytes(StandardCharsets.UTF_8);
            byte[] now = store.compareAndSet("leader", null, mine);
            c.barrier();
            byte[] leader = store.tryGet("leader");
            assertThat(now).isEqualTo(leader);
            long[] wins = {java.util.Arrays.equals(leader, mine) ? 1 : 0};
            c.allReduce(wins, ReduceOp.SUM);
            assertThat(wins[0]).isEqualTo(1);
            // the library's keys are out of reach: its own generation key is not visible, nor overwritten
            assertThat(store.tryGet("hcomm/generation/0")).isNull();
            c.barrier();
            if (rank == 0) assertThat(store.delete("model/path")).isTrue();
            c.barrier();
            assertThat(store.tryGet("model/path")).isNull();
            int[] z = {1};
            c.allReduce(z, ReduceOp.SUM);
            assertThat(z[0]).isEqualTo(n);
        });
    }
}
