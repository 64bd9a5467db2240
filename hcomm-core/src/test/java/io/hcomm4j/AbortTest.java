package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * {@code comm.abort()} from another thread while ops block: it returns at once, the blocked and pending ops of every
 * rank fail with CommAbortedException within milliseconds (HCOMM_TIMEOUT is 60 s), the health becomes FAILED (listeners
 * on the event thread), later ops fail at once, and other communicators of the same sessions go on working.
 */
class AbortTest {
    @Test
    void abortFromAnotherThreadFailsThePendingOpsOfEveryRankPromptly() throws Exception {
        int n = 3;
        AtomicLong abortedAt = new AtomicLong();
        Map<Integer, Long> failedAfter = new ConcurrentHashMap<>();
        Map<Integer, List<String>> listened = new ConcurrentHashMap<>();
        CountDownLatch blocked = new CountDownLatch(n);
        Ranks.runThreads(n, Duration.ofSeconds(60), b -> b.heartbeatTimeout(Duration.ofSeconds(2)), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            List<String> seen = new CopyOnWriteArrayList<>();
            listened.put(rank, seen);
            c.addHealthListener(health -> seen.add(health.state() + " on " + Thread.currentThread().getName()));
            Communicator other = c.dup();
            c.barrier();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            // each rank blocks: rank 0 in a receive on another thread, rank 1 in a receive, rank 2 in an all-reduce that
            // ranks 0 and 1 never join
            Runnable block = switch (rank) {
                case 0, 1 -> () -> c.recv(new byte[8], 1 - rank, 7);
                default -> () -> c.allReduce(new int[16], ReduceOp.SUM);
            };
            CommFuture<Status> pending = c.recvAsync(new byte[8], (rank + 1) % n, 8);
            Thread blocker = Thread.ofPlatform().start(() -> {
                try {
                    blocked.countDown();
                    block.run();
                } catch (Throwable e) {
                    failedAfter.put(rank, System.nanoTime() - abortedAt.get());
                    failure.set(e);
                }
            });
            try {
                if (rank == 0) {
                    blocked.await(30, TimeUnit.SECONDS);
                    Thread.sleep(300);
                    long t0 = System.nanoTime();
                    abortedAt.set(t0);
                    c.abort();
                    long took = System.nanoTime() - t0;
                    System.out.printf("AbortTest: abort() returned after %.3f ms%n", took / 1e6);
                    assertThat(took).as("abort() returns promptly").isLessThan(200_000_000L);
                    c.abort(); // idempotent
                }
                blocker.join(30_000);
                assertThat(blocker.isAlive()).as("rank %d still blocked", rank).isFalse();
                assertThat(failure.get()).as("rank %d", rank).isInstanceOf(CommAbortedException.class)
                        .hasMessageContaining("rank 0 aborted the communicator");
                assertThatThrownBy(pending::await).isInstanceOf(CommAbortedException.class);
                assertThat(c.health().state()).isEqualTo(Health.State.FAILED);
                assertThat(c.health().reason()).contains("rank 0 aborted");
                assertThatThrownBy(() -> c.send(new byte[1], (rank + 1) % n, 1)).isInstanceOf(CommAbortedException.class);
                assertThatThrownBy(() -> c.barrier()).isInstanceOf(CommAbortedException.class);
                // the other communicator is not affected
                int[] one = {1};
                other.allReduce(one, ReduceOp.SUM);
                assertThat(one[0]).isEqualTo(n);
                assertThat(other.health()).isEqualTo(Health.READY);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        for (int r = 0; r < n; r++) {
            long ms = failedAfter.get(r) / 1_000_000;
            System.out.printf("AbortTest: rank %d's blocked op failed %d ms after rank 0 called abort()%n", r, ms);
            assertThat(ms).as("rank %d", r).isLessThan(2_000);
            assertThat(listened.get(r)).containsExactly("FAILED on hcomm-events-" + r);
        }
    }
}
