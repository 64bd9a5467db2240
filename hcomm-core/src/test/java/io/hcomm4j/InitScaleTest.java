package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** 64 ranks (threads of one JVM, each its own session) init, exchange around a ring, and close. */
class InitScaleTest {
    @Test
    void sixtyFourRanksInitAndTalk() throws Exception {
        int n = 64;
        AtomicLong slowestInit = new AtomicLong();
        long t0 = System.nanoTime();
        Ranks.runThreads(n, Duration.ofMinutes(3), h -> {
            slowestInit.accumulateAndGet(System.nanoTime() - t0, Math::max);
            Communicator c = h.world();
            int next = (c.rank() + 1) % n, prev = (c.rank() - 1 + n) % n;
            int[] in = new int[2];
            CommFuture<Status> r = c.recvAsync(in, prev, 0);
            c.send(new int[] {c.rank(), c.rank() * 3}, next, 0);
            r.await();
            assertThat(in).containsExactly(prev, prev * 3);
        });
        System.out.printf("InitScaleTest: %d ranks: slowest init returned %.0f ms after start; whole job %.0f ms%n", n,
                slowestInit.get() / 1e6, (System.nanoTime() - t0) / 1e6);
    }
}
