package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link Communicator#shrink()} with in-process ranks: a shrink without failure (like dup) and a member that never
 * calls shrink (a timeout naming it). The process jobs, real ranks killed with SIGKILL (2 of 5; the last of 4 in a
 * training loop) whose survivors shrink and check every element of their collectives on the shrunk communicator, are
 * {@link GrowTest}'s: its jobs run that very scenario of {@link io.hcomm4j.testing.ShrinkWorker} up to the shrunk
 * communicator's checks, assert what was asserted here and print the shrink times (docs/reliability.md quotes them),
 * then grow back (one start of 5 or 4 JVMs instead of two).
 */
class ShrinkTest {
    @Test
    void shrinkWithoutFailureIsLikeDup() throws Exception {
        Ranks.runThreads(3, Duration.ofSeconds(120), h -> {
            Communicator w = h.world();
            Communicator s = w.shrink();
            assertThat(s.size()).isEqualTo(3);
            assertThat(s.rank()).isEqualTo(w.rank());
            assertThat(s.health().state()).isEqualTo(Health.State.READY);
            // messages of the two never mix: the same tag on both, received in the opposite order
            int peer = (w.rank() + 1) % 3, from = (w.rank() + 2) % 3;
            w.send(new int[] {1}, peer, 5);
            s.send(new int[] {2}, peer, 5);
            int[] a = new int[1], b = new int[1];
            s.recv(b, from, 5);
            w.recv(a, from, 5);
            assertThat(a[0]).isEqualTo(1);
            assertThat(b[0]).isEqualTo(2);
            int[] x = {w.rank() + 1};
            s.allReduce(x, ReduceOp.SUM);
            assertThat(x[0]).isEqualTo(6);
            s.close();
        });
    }

    @Test
    void aMemberThatNeverCallsShrinkIsNamedInATimeout() throws Exception {
        // nobody closes its session (rank 0's ends the store) before every rank is done: ranks 0 and 1 time out at
        // about the same moment, and the later one must still reach the store
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(3);
        Ranks.runThreads(3, Duration.ofSeconds(120), b -> b.timeout(Duration.ofSeconds(2)), h -> {
            Communicator w = h.world();
            try {
                // rank 2 never calls shrink: it only waits, in the finally below, until ranks 0 and 1 have timed out
                if (w.rank() == 2) return;
                long t0 = System.nanoTime();
                assertThatThrownBy(w::shrink).isInstanceOf(CommTimeoutException.class)
                        .hasMessageContaining("rank 2 has neither called shrink nor been found failed").hasMessageContaining("HCOMM_TIMEOUT");
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isBetween(1900L, 3900L);
            } finally {
                done.countDown();
                try {
                    done.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
    }

}
