package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.HcommException;
import io.hcomm4j.security.Auth;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A transport whose ranks are mostly absent (a transfer engine's slots: 65536 of them, 3 in use, and one handed out to a
 * process that never appears): a link costs no buffer until it connects (before, each of the 65536 links allocated 260
 * KiB of direct buffers at creation: 16 GiB), and without the ring of neighbour connections ({@link
 * PeerTransport#withoutNeighbourRing()}) nobody connects to a slot nobody asked for, not even after a failure, when the
 * ring would be re-opened past the failed rank.
 */
class SparseSlotsTest {
    private static final int SLOTS = 65536;

    @Test
    void mostlyAbsentPeersCostNothingAndAreNeverConnected() throws Exception {
        int[] ranks = {0, 7, 40000};
        long before = directBytes();
        var opts = new TransportOptions(Duration.ofSeconds(30), Duration.ofSeconds(5), Duration.ZERO, 64 * 1024, 1 << 20,
                Duration.ofSeconds(10), Duration.ofMillis(2500)).withRetry(5, Duration.ofMillis(100));
        PeerTransport[] ts = new PeerTransport[ranks.length];
        InetSocketAddress[] book = new InetSocketAddress[SLOTS];
        AtomicInteger strangers = new AtomicInteger();
        for (int i = 0; i < ranks.length; i++) {
            ts[i] = PeerTransport.open(ranks[i], SLOTS, InetAddress.getLoopbackAddress(), Auth.of("transport-test-secret"), 42, opts);
            book[ranks[i]] = ts[i].listenAddress();
        }
        try {
            for (PeerTransport t : ts) {
                t.withoutNeighbourRing();
                t.start(p -> {
                    if (book[p] == null) {
                        strangers.incrementAndGet();
                        throw new HcommException("slot " + p + " is empty");
                    }
                    return book[p];
                }, true);
            }
            // 0 and 7 talk, 40000 talks to 0 and then leaves: 0 must not go looking for a neighbour past it
            try (Arena a = Arena.ofShared()) {
                MemorySegment buf = a.allocate(1 << 20);
                MemorySegment in = a.allocate(1 << 20);
                ts[0].recv(1, 7, 5, in);
                ts[1].send(1, 0, 5, buf).await(Duration.ofSeconds(30));
                ts[0].recv(1, 40000, 6, in);
                ts[2].send(1, 0, 6, buf).await(Duration.ofSeconds(30));
            }
            assertThat(ts[0].transportTo(7)).isEqualTo("tcp");
            assertThat(ts[0].transportTo(40000)).isEqualTo("tcp");
            ts[2].close();
            long until = System.nanoTime() + 10_000_000_000L;
            while (!ts[0].failed(40000) && System.nanoTime() < until) Thread.sleep(10);
            assertThat(ts[0].failed(40000)).isTrue();
            // a slot handed out to a process that never appeared: a send to it fails, naming the slot, and nothing else
            try (Arena a = Arena.ofShared()) {
                SendRequest s = ts[0].send(1, 123, 1, a.allocate(8));
                assertThatThrownBy(() -> s.await(Duration.ofSeconds(10))).isInstanceOf(HcommException.class).hasMessageContaining("123");
            }
            Thread.sleep(1000); // watchdog ticks, heartbeats
            assertThat(strangers.get()).as("address lookups of slots nobody asked for").isEqualTo(1);
            for (int p = 1; p < SLOTS; p++) {
                if (p != 7 && p != 40000) assertThat(ts[0].transportTo(p)).isEqualTo("none");
            }
            long grown = directBytes() - before;
            // three transports' own buffers and their few links; 65536 eager links would be 16 GiB
            assertThat(grown).as("direct buffer bytes").isLessThan(64L << 20);
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    private static long directBytes() {
        for (BufferPoolMXBean b : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (b.getName().equals("direct")) return b.getMemoryUsed();
        }
        return 0;
    }
}
