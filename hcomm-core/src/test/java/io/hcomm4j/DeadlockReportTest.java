package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A wait that cannot progress says why when HCOMM_TIMEOUT (2 s here) ends it: the timeout message names the op, the
 * peer, the tag and the size, what the awaited rank is doing (read from the status it publishes when asked), and, when
 * the waits close a cycle, calls it a likely deadlock and says what to change. The seed's literal pattern (every rank
 * sends 64 MiB, then receives) on a stream and with blocking sends, over rings of 2 and 3 ranks; every rank receiving
 * first; and a peer that is simply busy in its own code (no cycle, no verdict).
 */
class DeadlockReportTest {
    private static final long BIG = 64L << 20;

    /** Every rank waits here before it closes: rank 0 hosts the store, which the others' explanations read. */
    private static void allHere(java.util.concurrent.CountDownLatch done) {
        done.countDown();
        try {
            assertThat(done.await(60, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3})
    void everyRankSendingFirstOnAStreamIsReportedAsALikelyDeadlock(int n) throws Exception {
        Map<Integer, String> messages = new ConcurrentHashMap<>();
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(n);
        Ranks.runThreads(n, Duration.ofMinutes(2), b -> b.timeout(Duration.ofSeconds(2)), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            int next = (rank + 1) % n;
            try (Arena arena = Arena.ofShared(); Stream s = c.newStream()) {
                MemorySegment out = arena.allocate(BIG);
                s.send(out, next, 0);
                Throwable t = catchThrowable(s::synchronize);
                assertThat(t).as("rank %d", rank).isInstanceOf(CommTimeoutException.class);
                messages.put(rank, t.getMessage());
            }
            allHere(done);
        });
        System.out.println("DeadlockReportTest, " + n + " ranks, rank 0: " + messages.get(0));
        for (int r = 0; r < n; r++) {
            String m = messages.get(r);
            int next = (r + 1) % n;
            assertThat(m).as("rank %d", r)
                    .startsWith("rank " + r + ": stream.synchronize: 1 op still pending after 2.0 s (HCOMM_TIMEOUT): send to rank "
                            + next + " (tag 0, 64.0 MiB): rank " + r + " waits in send to rank " + next + " (tag 0, 64.0 MiB) for ")
                    .contains("rank " + next + " waits in send to rank " + (next + 1) % n + " (tag 0, 64.0 MiB) for ")
                    .contains(": a likely deadlock: ranks " + cycleFrom(r, n) + " each wait in a send for the next to post its "
                            + "receive, and none does (a message above HCOMM_EAGER_LIMIT, 64.0 KiB, is sent only into a posted "
                            + "receive); post the receives first (comm.batch() posts them before its sends; or recvAsync before "
                            + "the send), let the ranks alternate (even ranks send first), or raise HCOMM_EAGER_LIMIT above the "
                            + "message size");
        }
    }

    /** "1 -> 2 -> 0 -> 1": the ring as rank {@code r} follows it. */
    private static String cycleFrom(int r, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i <= n; i++) sb.append(i > 0 ? " -> " : "").append((r + i) % n);
        return sb.toString();
    }

    @Test
    void aBlockingSendInTheSameCycleSaysSoToo() throws Exception {
        Map<Integer, String> messages = new ConcurrentHashMap<>();
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(2);
        Ranks.runThreads(2, Duration.ofMinutes(2), b -> b.timeout(Duration.ofSeconds(2)), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            try (Arena arena = Arena.ofShared()) {
                Throwable t = catchThrowable(() -> c.send(arena.allocate(BIG), 1 - rank, 3));
                assertThat(t).isInstanceOf(CommTimeoutException.class);
                messages.put(rank, t.getMessage());
            }
            allHere(done);
        });
        for (int r = 0; r < 2; r++) {
            assertThat(messages.get(r)).as("rank %d", r)
                    .startsWith("rank " + r + ": send to rank " + (1 - r) + " (tag 3")
                    .containsPattern("did not complete within \\d+\\.\\d s \\(HCOMM_TIMEOUT\\): rank " + r + " waits in send to rank "
                            + (1 - r) + " \\(tag 3, 64\\.0 MiB\\)")
                    .contains("a likely deadlock: ranks " + r + " -> " + (1 - r) + " -> " + r + " each wait in a send");
        }
    }

    @Test
    void everyRankReceivingFirstIsReportedWithItsOwnFix() throws Exception {
        Map<Integer, String> messages = new ConcurrentHashMap<>();
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(2);
        Ranks.runThreads(2, Duration.ofMinutes(2), b -> b.timeout(Duration.ofSeconds(2)), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            Throwable t = catchThrowable(() -> c.recv(new byte[100], 1 - rank, 5));
            assertThat(t).isInstanceOf(CommTimeoutException.class);
            messages.put(rank, t.getMessage());
            allHere(done);
        });
        for (int r = 0; r < 2; r++) {
            assertThat(messages.get(r)).as("rank %d", r)
                    .containsPattern("rank " + r + ": recv from rank " + (1 - r) + " \\(tag 5, buffer 100 bytes\\) did not complete within "
                            + "\\d+\\.\\d s")
                    .contains("rank " + (1 - r) + " waits in recv from rank " + r + " (tag 5, 100 B)")
                    .contains("a likely deadlock: ranks " + r + " -> " + (1 - r) + " -> " + r
                            + " each wait to receive from the next, and none sends; let one side send first, or use comm.batch()");
        }
    }

    @Test
    void aPeerBusyInItsOwnCodeIsNamedWithoutAVerdict() throws Exception {
        Map<Integer, String> messages = new ConcurrentHashMap<>();
        java.util.concurrent.CountDownLatch timedOut = new java.util.concurrent.CountDownLatch(1);
        Ranks.runThreads(2, Duration.ofMinutes(2), b -> b.timeout(Duration.ofSeconds(2)), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            c.barrier(); // connected
            if (rank == 0) {
                Throwable t = catchThrowable(() -> c.recv(new int[4], 1, 8));
                timedOut.countDown();
                assertThat(t).isInstanceOf(CommTimeoutException.class);
                messages.put(rank, t.getMessage());
            } else {
                try {
                    assertThat(timedOut.await(60, java.util.concurrent.TimeUnit.SECONDS)).isTrue(); // busy in its own code
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            }
            c.barrier();
        });
        assertThat(messages.get(0))
                .containsPattern("rank 0: recv from rank 1 \\(tag 8, buffer 16 bytes\\) did not complete within \\d+\\.\\d s "
                        + "\\(HCOMM_TIMEOUT\\): rank 0 waits in recv from rank 1 \\(tag 8, 16 B\\) for ")
                .contains("; rank 1 waits in no point-to-point op: it runs no op (it runs its own code)")
                .doesNotContain("deadlock");
    }
}
