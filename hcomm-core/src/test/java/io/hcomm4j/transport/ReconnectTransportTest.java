package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.PeerFailedException;
import io.hcomm4j.Status;
import io.hcomm4j.security.Auth;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Transparent recovery of a dropped connection, with transports of this JVM talking over loopback TCP:
 * the test hook breaks the connection (RST, close, or shutdown, without BYE) in the middle of a 64 MiB message and many
 * times during streams of messages in both directions; every byte arrives, once, in order. Retries that run out fail
 * the peer within their budget. A link over shared memory keeps no resend log: its dropped connection fails the peer.
 */
class ReconnectTransportTest {
    private static final long TIMEOUT = 60_000_000_000L;

    static PeerTransport[] job(int n, Path shmDir, int retryMax, Duration retryInterval) throws Exception {
        PeerTransport[] ts = new PeerTransport[n];
        InetSocketAddress[] book = new InetSocketAddress[n];
        var opts = new TransportOptions(Duration.ofSeconds(60), Duration.ofSeconds(10), Duration.ofNanos(50_000), 64 * 1024,
                64 << 20, Duration.ofSeconds(10), Duration.ofMillis(2500)).withRetry(retryMax, retryInterval);
        for (int i = 0; i < n; i++) {
            ts[i] = PeerTransport.open(i, n, InetAddress.getLoopbackAddress(), Auth.of("transport-test-secret"), 42, opts);
            book[i] = ts[i].listenAddress();
        }
        for (PeerTransport t : ts) {
            if (shmDir != null) t.enableShm(new ShmOptions(shmDir, 1 << 20, p -> true, null));
            t.start(p -> book[p]);
        }
        return ts;
    }

    private static Path shm(String kind) {
        return kind.equals("shm") ? Path.of("/dev/shm") : null;
    }

    static void fill(MemorySegment s, long seed) {
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, seed * 0x9E3779B97F4A7C15L + i);
        for (long i = s.byteSize() & ~7L; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (seed + i));
    }

    static void await(Request<?> r) {
        assertThat(r.awaitUntil(System.nanoTime() + TIMEOUT)).as("completes: %s", r.describe()).isTrue();
        assertThat(Thread.currentThread().isInterrupted()).as("%s interrupted", Thread.currentThread()).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp"})
    void a64MiBMessageSurvivesDropsHalfWay(String kind) throws Exception {
        PeerTransport[] ts = job(2, shm(kind), 5, Duration.ofMillis(100));
        try (Arena arena = Arena.ofShared()) {
            long size = 64L << 20;
            MemorySegment src = arena.allocate(size), dst = arena.allocate(size);
            int round = 0;
            for (Conduit.Drop how : Conduit.Drop.values()) {
                for (int receiverDrops = 0; receiverDrops < 2; receiverDrops++) {
                    round++;
                    fill(src, round);
                    dst.fill((byte) 0);
                    var r = ts[1].recv(0, 0, round, dst);
                    // the receiver drops after it read 24 MiB of the message; or the sender drops a few ms into it
                    PeerTransport dropper = receiverDrops == 1 ? ts[1] : ts[0];
                    if (receiverDrops == 1) dropper.dropAfter(0, 24L << 20, how);
                    var w = ts[0].send(0, 1, round, src);
                    if (receiverDrops == 0) {
                        // the sender drops while its DATA is on the way: after the peer took some of it
                        Thread.sleep(ThreadLocalRandom.current().nextInt(1, 5));
                        ts[0].drop(1, how);
                    }
                    await(w);
                    await(r);
                    Status st = r.join();
                    assertThat(st.bytes()).isEqualTo(size);
                    assertThat(st.tag()).isEqualTo(round);
                    assertThat(dst.mismatch(src)).as("round %d (%s, %s drops)", round, how, receiverDrops == 1 ? "receiver" : "sender").isEqualTo(-1);
                }
            }
            assertThat(ts[1].reconnects()).as("reconnects").isGreaterThanOrEqualTo(3);
            assertThat(ts[0].host.duplicatesDropped.get() + ts[1].host.duplicatesDropped.get()).isZero();
            assertThat(ts[0].transportTo(1)).isEqualTo(kind);
            System.out.printf("ReconnectTransportTest %s 64 MiB: reconnects %d/%d, frames sent again %d/%d (%d/%d bytes)%n", kind,
                    ts[0].reconnects(), ts[1].reconnects(), ts[0].host.framesResent.get(), ts[1].host.framesResent.get(),
                    ts[0].host.bytesResent.get(), ts[1].host.bytesResent.get());
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    /**
     * Both ranks stream 2000 messages to each other (sizes from 0 to 200 KiB: eager and rendezvous, tag = index) while a
     * thread breaks the connection every 5 ms, each time from a random side in a random way. Receives take ANY_TAG, so
     * order and count are checked: each message arrives once, in order, intact.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp"})
    void streamsSurviveADropEvery5ms(String kind) throws Exception {
        PeerTransport[] ts = job(2, shm(kind), 20, Duration.ofMillis(20));
        int count = 2000;
        AtomicBoolean done = new AtomicBoolean();
        AtomicInteger drops = new AtomicInteger();
        AtomicReference<Throwable> error = new AtomicReference<>();
        try {
            // connect first
            exchange(ts, 0, 1, 0, 16);
            Thread dropper = Thread.ofPlatform().name("dropper").start(() -> {
                Conduit.Drop[] hows = Conduit.Drop.values();
                while (!done.get()) {
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        return;
                    }
                    int side = ThreadLocalRandom.current().nextInt(2);
                    if (ts[side].drop(1 - side, hows[ThreadLocalRandom.current().nextInt(hows.length)])) drops.incrementAndGet();
                }
            });
            List<Thread> streams = new ArrayList<>();
            for (int s = 0; s < 2; s++) {
                int from = s, to = 1 - s;
                streams.add(Thread.ofPlatform().name("send-" + from).start(() -> run(error, () -> sendStream(ts[from], to, count))));
                streams.add(Thread.ofPlatform().name("recv-" + to).start(() -> run(error, () -> recvStream(ts[to], from, count))));
            }
            for (Thread t : streams) t.join(120_000);
            done.set(true);
            dropper.join();
            if (error.get() != null) throw new AssertionError(error.get());
            for (Thread t : streams) assertThat(t.isAlive()).as(t.getName() + " finished").isFalse();
            // nothing more arrives: no message twice
            Thread.sleep(100);
            assertThat(ts[0].iprobe(0, PeerTransport.ANY, PeerTransport.ANY, null)).isNull();
            assertThat(ts[1].iprobe(0, PeerTransport.ANY, PeerTransport.ANY, null)).isNull();
            assertThat(drops.get()).as("drops").isGreaterThanOrEqualTo(10);
            assertThat(ts[0].reconnects() + ts[1].reconnects()).isGreaterThanOrEqualTo(drops.get());
            assertThat(ts[0].host.duplicatesDropped.get() + ts[1].host.duplicatesDropped.get()).isZero();
            assertThat(ts[0].failedRanks()).isEmpty();
            assertThat(ts[1].failedRanks()).isEmpty();
            System.out.printf("ReconnectTransportTest %s streams: %d drops, reconnects %d/%d, frames sent again %d/%d%n", kind, drops.get(),
                    ts[0].reconnects(), ts[1].reconnects(), ts[0].host.framesResent.get(), ts[1].host.framesResent.get());
        } finally {
            done.set(true);
            for (PeerTransport t : ts) t.close();
        }
    }

    private interface Body {
        void run() throws Exception;
    }

    private static void run(AtomicReference<Throwable> error, Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            error.compareAndSet(null, t);
        }
    }

    private static long sizeOf(int i) {
        return switch (i % 4) {
            case 0 -> 0;
            case 1 -> 1 + (i * 37L) % 4000;
            case 2 -> 60_000 + (i * 131L) % 10_000; // around the eager limit
            default -> 100_000 + (i * 977L) % 100_000; // rendezvous
        };
    }

    private static void sendStream(PeerTransport t, int to, int count) throws Exception {
        List<SendRequest> inFlight = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            for (int i = 0; i < count; i++) {
                MemorySegment m = arena.allocate(Math.max(1, sizeOf(i))).asSlice(0, sizeOf(i));
                fill(m, t.rank * 100_000L + i);
                inFlight.add(t.send(7, to, i, m));
                if (inFlight.size() >= 32) {
                    for (SendRequest s : inFlight) await(s);
                    inFlight.clear();
                }
            }
            for (SendRequest s : inFlight) await(s);
        }
    }

    private static void recvStream(PeerTransport t, int from, int count) throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(256 * 1024);
            MemorySegment expect = arena.allocate(256 * 1024);
            for (int i = 0; i < count; i++) {
                var r = t.recv(7, from, PeerTransport.ANY, buf);
                await(r);
                Status st = r.join();
                assertThat(st.tag()).as("message %d from rank %d comes in order", i, from).isEqualTo(i);
                long n = sizeOf(i);
                assertThat(st.bytes()).isEqualTo(n);
                fill(expect.asSlice(0, n), from * 100_000L + i);
                assertThat(buf.asSlice(0, n).mismatch(expect.asSlice(0, n))).as("message %d intact", i).isEqualTo(-1);
            }
        }
    }

    private static void exchange(PeerTransport[] ts, int a, int b, int tag, int bytes) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment x = arena.allocate(bytes), y = arena.allocate(bytes);
            var r = ts[b].recv(0, a, tag, y);
            await(ts[a].send(0, b, tag, x));
            await(r);
        }
    }

    @Test
    void retriesThatRunOutFailThePeerWithinTheirBudget() throws Exception {
        // 3 attempts in windows of 100, 200 and 400 ms: given up 0.7 s after the drop
        PeerTransport[] ts = job(2, null, 3, Duration.ofMillis(100));
        try (Arena arena = Arena.ofShared()) {
            exchange(ts, 0, 1, 0, 16);
            ts[0].unreachable = true;
            ts[1].unreachable = true;
            var r = ts[0].recv(0, 1, 5, arena.allocate(8));
            long t0 = System.nanoTime();
            assertThat(ts[0].drop(1, Conduit.Drop.RESET)).isTrue();
            assertThatThrownBy(() -> r.await(Duration.ofSeconds(30))).isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining("3 attempts to reconnect");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("ReconnectTransportTest: retries (3 x from 100 ms) ran out after %d ms%n", ms);
            assertThat(ms).isBetween(600L, 700L + 1_500L);
            assertThat(ts[0].failedRanks()).containsExactly(1);
            // the other side gave up too (its attempts found no route either)
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (ts[1].failedRanks().isEmpty() && System.nanoTime() < deadline) Thread.sleep(10);
            assertThat(ts[1].failedRanks()).containsExactly(0);
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    @Test
    void aDroppedSharedMemoryConnectionFailsThePeerEvenWithRetries() throws Exception {
        PeerTransport[] ts = job(2, Path.of("/dev/shm"), 5, Duration.ofMillis(100));
        try (Arena arena = Arena.ofShared()) {
            exchange(ts, 0, 1, 0, 16);
            assertThat(ts[0].transportTo(1)).isEqualTo("shm");
            var r = ts[0].recv(0, 1, 5, arena.allocate(8));
            var r1 = ts[1].recv(0, 0, 5, arena.allocate(8));
            assertThat(ts[0].drop(1, Conduit.Drop.RESET)).isTrue();
            assertThatThrownBy(() -> r.await(Duration.ofSeconds(30))).isInstanceOf(PeerFailedException.class);
            assertThatThrownBy(() -> r1.await(Duration.ofSeconds(30))).isInstanceOf(PeerFailedException.class);
            assertThat(ts[0].reconnects() + ts[1].reconnects()).isZero();
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    @Test
    void withoutRetriesADropFailsThePeer() throws Exception {
        PeerTransport[] ts = job(2, null, 0, Duration.ofMillis(100));
        try (Arena arena = Arena.ofShared()) {
            exchange(ts, 0, 1, 0, 16);
            var r = ts[0].recv(0, 1, 5, arena.allocate(8));
            assertThat(ts[0].drop(1, Conduit.Drop.RESET)).isTrue();
            assertThatThrownBy(() -> r.await(Duration.ofSeconds(30))).isInstanceOf(PeerFailedException.class);
            assertThat(ts[0].reconnects()).isZero();
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }
}
