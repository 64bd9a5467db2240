package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Init and close leave nothing behind; blocking calls have deadlines; closed communicators refuse work. */
class LifecycleTest {
    static long openFds() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    static long hcommThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("hcomm-")).count();
    }

    @Test
    void fiftyInitCloseCyclesLeakNoThreadsOrDescriptors() throws Exception {
        long fdsAfterWarmup = -1;
        long threadsAfterWarmup = -1;
        for (int i = 0; i < 50; i++) {
            int round = i;
            Ranks.runThreads(2, Duration.ofSeconds(60), h -> {
                Communicator c = h.world();
                int peer = 1 - c.rank();
                int[] out = {c.rank(), round, 7};
                int[] in = new int[3];
                CommFuture<Status> r = c.recvAsync(in, peer, 0);
                c.send(out, peer, 0);
                r.await();
                assertThat(in).containsExactly(peer, round, 7);
                try (io.hcomm4j.Stream s = c.newStream()) {
                    s.send(out, peer, 1);
                    s.recv(in, peer, 1);
                    s.synchronize();
                }
                assertThat(in).containsExactly(peer, round, 7);
            });
            // worker threads of a closed session end; give them a moment
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (hcommThreads() > 0 && System.nanoTime() < deadline) Thread.sleep(5);
            assertThat(hcommThreads()).as("hcomm threads alive after close, round %d", i).isZero();
            if (i == 4) {
                fdsAfterWarmup = openFds();
                threadsAfterWarmup = Thread.activeCount();
            }
        }
        assertThat(openFds()).as("open file descriptors").isLessThanOrEqualTo(fdsAfterWarmup + 4);
        assertThat((long) Thread.activeCount()).as("live threads").isLessThanOrEqualTo(threadsAfterWarmup + 4);
    }

    @Test
    void blockingReceiveTimesOutNamingOpAndPeer() throws Exception {
        int port = Ranks.freePort();
        AtomicReference<Throwable> seen = new AtomicReference<>();
        Thread other = Thread.ofPlatform().start(() -> {
            try (Hcomm h = Hcomm.init(Ranks.threadConfig(1, 2, port).timeout(Duration.ofSeconds(60)).build())) {
                // rank 1 sends nothing on tag 5; it only waits until rank 0 is done
                h.world().recv(new byte[1], 0, 99);
            } catch (Throwable e) {
                seen.set(e);
            }
        });
        try (Hcomm h = Hcomm.init(Ranks.threadConfig(0, 2, port).timeout(Duration.ofMillis(800)).build())) {
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> h.world().recv(new byte[4], 1, 5))
                    .isInstanceOf(CommTimeoutException.class)
                    .hasMessageContaining("recv from rank 1")
                    .hasMessageContaining("tag 5");
            assertThat((System.nanoTime() - t0) / 1_000_000).isBetween(700L, 10_000L);
            h.world().send(new byte[1], 1, 99);
        }
        other.join(30_000);
        assertThat(seen.get()).isNull();
    }

    @Test
    void closedCommunicatorAndSessionRefuseWork() throws Exception {
        Ranks.runThreads(2, Duration.ofSeconds(60), h -> {
            Communicator c = h.world();
            io.hcomm4j.Stream s = c.newStream();
            c.close();
            assertThat(c.isClosed()).isTrue();
            assertThatThrownBy(() -> c.send(new byte[1], 1 - c.rank(), 0))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            assertThatThrownBy(() -> c.recvAsync(new byte[1], 1 - c.rank(), 0))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            assertThatThrownBy(() -> s.send(new byte[1], 1 - c.rank(), 0))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            s.close();
        });
    }

    @Test
    void closingTheSessionFailsPendingReceives() throws Exception {
        Ranks.runThreads(2, Duration.ofSeconds(60), h -> {
            Communicator c = h.world();
            if (c.rank() == 0) {
                CommFuture<Status> pending = c.recvAsync(new byte[8], 1, 42);
                c.recv(new byte[1], 1, 1); // rank 1 is ready to close
                h.close();
                assertThatThrownBy(pending::await).isInstanceOf(HcommException.class);
            } else {
                c.send(new byte[1], 0, 1);
            }
        });
    }
}
