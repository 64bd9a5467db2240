package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.bootstrap.TcpStore;
import io.hcomm4j.monitor.JobStatus;
import io.hcomm4j.monitor.RankStatus;
import io.hcomm4j.testing.Ranks;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * HCOMM_STUCK_REPORT=1s with a receive that waits 4 s for its sender: the receiving rank publishes its stuck receive
 * (tag, size, the rank it waits for) in the store, the sender publishes its own state when asked, and once the message
 * came the receiver publishes again, without the op. Nothing is published while nothing is stuck.
 */
class StuckReportTest {
    @Test
    void aStuckReceiveIsPublishedAndSoIsThePeerItWaitsFor() throws Exception {
        int port = Ranks.freePort();
        CountDownLatch seen = new CountDownLatch(1);
        AtomicReference<JobStatus> during = new AtomicReference<>();
        Thread watcher = Thread.ofPlatform().start(() -> {
            try (TcpStore store = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), "thread-job-secret-01", Duration.ofSeconds(30))) {
                long deadline = System.nanoTime() + 30_000_000_000L;
                while (System.nanoTime() < deadline) {
                    try {
                        JobStatus s = JobStatus.read(store, OptionalLong.empty());
                        if (s.ranks().get(0) != null && s.ranks().get(1) != null) {
                            during.set(s);
                            break;
                        }
                    } catch (HcommException notYet) {
                        // the session is not there yet
                    }
                    Thread.sleep(50);
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            } finally {
                seen.countDown();
            }
        });
        AtomicReference<RankStatus> after = new AtomicReference<>();
        Ranks.runThreads(2, port, Duration.ofSeconds(60), b -> b.stuckReport(Duration.ofSeconds(1)), h -> {
            Communicator c = h.world();
            c.barrier();
            try {
                if (c.rank() == 0) {
                    assertThat(c.recv(new byte[64], 1, 5).bytes()).isEqualTo(3);
                    // published again once nothing is stuck
                    try (TcpStore store = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), "thread-job-secret-01", Duration.ofSeconds(10))) {
                        long deadline = System.nanoTime() + 10_000_000_000L;
                        while (System.nanoTime() < deadline) {
                            RankStatus s = JobStatus.read(store, OptionalLong.empty()).ranks().get(0);
                            if (s != null && s.ops().isEmpty()) {
                                after.set(s);
                                break;
                            }
                            Thread.sleep(50);
                        }
                    }
                } else {
                    assertThat(seen.await(20, TimeUnit.SECONDS)).isTrue();
                    c.send(new byte[3], 0, 5);
                }
                c.barrier();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        watcher.join(30_000);
        JobStatus s = during.get();
        assertThat(s).as("statuses published while the receive was stuck").isNotNull();
        System.out.println("StuckReportTest: status while stuck:\n" + s.render(System.currentTimeMillis()));
        RankStatus r0 = s.ranks().get(0);
        assertThat(r0.ops()).singleElement().satisfies(op -> {
            assertThat(op.collective()).isFalse();
            assertThat(op.kind()).isEqualTo("recv");
            assertThat(op.seq()).isEqualTo(5);
            assertThat(op.bytes()).isEqualTo(64);
            assertThat(op.waitingFor()).containsExactly(1);
            assertThat(op.stuck()).isTrue();
            assertThat(op.waitedMillis()).isGreaterThanOrEqualTo(1000);
        });
        assertThat(r0.comms()).singleElement().satisfies(cm -> assertThat(cm.collectives()).isEqualTo(1));
        assertThat(s.ranks().get(1).ops()).as("rank 1, asked, runs no op").isEmpty();
        assertThat(s.findings()).anyMatch(f -> f.startsWith("rank 0 has waited ") && f.endsWith("in recv tag 5 64 B"));
        assertThat(after.get()).as("rank 0 published again after the receive completed").isNotNull();
        assertThat(after.get().health()).isEqualTo("READY");
    }
}
