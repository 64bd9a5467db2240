package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.HcommException;
import io.hcomm4j.Status;
import io.hcomm4j.TlsConfig;
import io.hcomm4j.security.Auth;
import io.hcomm4j.security.JobKeys;
import io.hcomm4j.security.TlsContext;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Data links under TLS (HCOMM_TLS): every byte arrives, over TCP and beside shared-memory rings; what crosses the
 * network is ciphertext (a relay in the middle records it); a changed byte on the way breaks the connection instead
 * of the data (the reconnect resends); a certificate the job does not trust and a peer without TLS are refused with
 * a message that says so.
 */
class TlsTransportTest {
    private static final String SECRET = "tls-transport-test-secret-0123456789";
    private static final byte[] MARKER = "HCOMM4J-PLAINTEXT-MARKER-".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    static Path dir;
    static TlsConfig keys;
    static TlsConfig strangerKeys;

    @BeforeAll
    static void makeKeys() throws IOException {
        keys = JobKeys.create(dir.resolve("job"));
        strangerKeys = JobKeys.create(dir.resolve("stranger"));
    }

    static Auth tls(TlsConfig k) {
        return Auth.of(SECRET).withTls(TlsContext.of(k));
    }

    /** {@code route}: where rank i reaches rank p (null: its listener). */
    private static PeerTransport[] job(Auth[] auth, Path shmDir, TransportOptions opts, Route route) throws Exception {
        int n = auth.length;
        PeerTransport[] ts = new PeerTransport[n];
        InetSocketAddress[] book = new InetSocketAddress[n];
        for (int i = 0; i < n; i++) {
            ts[i] = PeerTransport.open(i, n, InetAddress.getLoopbackAddress(), auth[i], 42, opts);
            book[i] = ts[i].listenAddress();
        }
        for (int i = 0; i < n; i++) {
            int me = i;
            if (shmDir != null) ts[i].enableShm(new ShmOptions(shmDir, 1 << 20, p -> true, null));
            ts[i].start(p -> route == null ? book[p] : route.to(me, p, book[p]));
        }
        return ts;
    }

    interface Route {
        InetSocketAddress to(int from, int peer, InetSocketAddress listener) throws RuntimeException;
    }

    private static TransportOptions options() {
        return new TransportOptions(Duration.ofSeconds(60), Duration.ofSeconds(10), Duration.ofNanos(50_000), 64 * 1024, 64 << 20);
    }

    private static Auth[] all(int n, Auth a) {
        Auth[] r = new Auth[n];
        java.util.Arrays.fill(r, a);
        return r;
    }

    @Test
    void everyByteArrivesBothWaysAtOnceOverTls() throws Exception {
        PeerTransport[] ts = job(all(3, tls(keys)), null, options(), null);
        try {
            exchangeAll(ts, new long[] {0, 1, 100, 16383, 16384, 16385, 65537, (1 << 20) + 7, 8L << 20}, new Random(18));
            for (int i = 0; i < 3; i++) {
                for (int p = 0; p < 3; p++) if (p != i) assertThat(ts[i].transportTo(p)).isEqualTo("tls");
            }
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    @Test
    void sharedMemoryLinksGoOnBesideTls() throws Exception {
        PeerTransport[] ts = job(all(2, tls(keys)), Path.of("/dev/shm"), options(), null);
        try {
            exchangeAll(ts, new long[] {1, 4096, (1 << 20) + 3, 8L << 20}, new Random(19));
            assertThat(ts[0].transportTo(1)).isEqualTo("shm");
            assertThat(ts[1].transportTo(0)).isEqualTo("shm");
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    /** Every rank sends a distinct, seeded message of each size to every other at once; each checks every byte. */
    private static void exchangeAll(PeerTransport[] ts, long[] sizes, Random rnd) throws Exception {
        int n = ts.length;
        try (Arena arena = Arena.ofShared()) {
            for (long size : sizes) {
                MemorySegment[][] out = new MemorySegment[n][n];
                MemorySegment[][] in = new MemorySegment[n][n];
                List<Request> reqs = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    for (int p = 0; p < n; p++) {
                        if (p == i) continue;
                        out[i][p] = arena.allocate(Math.max(1, size)).asSlice(0, size);
                        in[p][i] = arena.allocate(Math.max(1, size)).asSlice(0, size);
                        byte[] b = new byte[(int) size];
                        rnd.nextBytes(b);
                        MemorySegment.copy(MemorySegment.ofArray(b), 0, out[i][p], 0, size);
                    }
                }
                for (int i = 0; i < n; i++) {
                    for (int p = 0; p < n; p++) if (p != i) reqs.add(ts[p].recv(0, i, 7, in[p][i]));
                }
                for (int i = 0; i < n; i++) {
                    for (int p = 0; p < n; p++) if (p != i) reqs.add(ts[i].send(0, p, 7, out[i][p]));
                }
                for (Request r : reqs) r.await();
                for (int i = 0; i < n; i++) {
                    for (int p = 0; p < n; p++) {
                        if (p == i) continue;
                        assertThat(in[p][i].mismatch(out[i][p])).as("rank %d -> %d, %d bytes", i, p, size).isEqualTo(-1);
                    }
                }
            }
        }
    }

    @Test
    void theWireCarriesCiphertextOnly() throws Exception {
        // the control first: the same relay sees the marker on a plain link, so the check below can fail
        assertThat(relayedRun(Auth.of(SECRET))).as("plain TCP shows the payload").isTrue();
        assertThat(relayedRun(tls(keys))).as("TLS hides the payload").isFalse();
    }

    /** Sends a marker-filled message 0 -> 1 through recording relays; whether the relays saw the marker in clear. */
    private static boolean relayedRun(Auth auth) throws Exception {
        try (Relay r01 = new Relay(-1); Relay r10 = new Relay(-1)) {
            PeerTransport[] ts = job(all(2, auth), null, options(), (from, peer, listener) -> {
                Relay r = from == 0 ? r01 : r10;
                r.target(listener);
                return r.address();
            });
            try (Arena arena = Arena.ofShared()) {
                long size = 256 * 1024;
                MemorySegment src = arena.allocate(size), dst = arena.allocate(size);
                for (long i = 0; i < size; i++) src.set(ValueLayout.JAVA_BYTE, i, MARKER[(int) (i % MARKER.length)]);
                var rr = ts[1].recv(0, 0, 3, dst);
                ts[0].send(0, 1, 3, src).await();
                Status st = rr.await();
                assertThat(st.bytes()).isEqualTo(size);
                assertThat(dst.mismatch(src)).isEqualTo(-1);
            } finally {
                for (PeerTransport t : ts) t.close();
            }
            return contains(r01.seen(), MARKER) || contains(r10.seen(), MARKER);
        }
    }

    @Test
    void aChangedByteBreaksTheConnectionNotTheData() throws Exception {
        // the relay flips one byte well inside the data phase, once; TLS rejects the record, the link is re-established
        // (through the relay again, untouched this time) and the message is resent from the resend log
        TransportOptions opts = new TransportOptions(Duration.ofSeconds(60), Duration.ofSeconds(10), Duration.ofNanos(50_000),
                64 * 1024, 64 << 20, Duration.ofSeconds(10), Duration.ofMillis(2500)).withRetry(5, Duration.ofMillis(200));
        try (Relay r01 = new Relay(3 << 20); Relay r10 = new Relay(3 << 20)) {
            PeerTransport[] ts = job(all(2, tls(keys)), null, opts, (from, peer, listener) -> {
                Relay r = from == 0 ? r01 : r10;
                r.target(listener);
                return r.address();
            });
            try (Arena arena = Arena.ofShared()) {
                long size = 8L << 20;
                MemorySegment src = arena.allocate(size), dst = arena.allocate(size);
                Random rnd = new Random(20);
                for (long i = 0; i < size; i += 8) src.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
                var rr = ts[1].recv(0, 0, 4, dst);
                ts[0].send(0, 1, 4, src).await();
                assertThat(rr.await().bytes()).isEqualTo(size);
                assertThat(dst.mismatch(src)).isEqualTo(-1);
                assertThat(r01.flipped() + r10.flipped()).as("the relay changed a byte").isEqualTo(1);
                assertThat(ts[0].reconnects() + ts[1].reconnects()).as("the link was re-established").isGreaterThan(0);
            } finally {
                for (PeerTransport t : ts) t.close();
            }
        }
    }

    @Test
    void aCertificateTheJobDoesNotTrustIsRefused() throws Exception {
        TransportOptions opts = new TransportOptions(Duration.ofSeconds(20), Duration.ofSeconds(3), Duration.ofNanos(50_000), 64 * 1024, 64 << 20);
        PeerTransport[] ts = job(new Auth[] {tls(keys), tls(strangerKeys)}, null, opts, null);
        try (Arena arena = Arena.ofShared()) {
            assertThatThrownBy(() -> ts[0].send(0, 1, 1, arena.allocate(8)).await())
                    .isInstanceOf(HcommException.class)
                    .hasMessageContaining("TLS handshake failed");
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    @Test
    void aPeerWithoutTlsIsToldWhy() throws Exception {
        TransportOptions opts = new TransportOptions(Duration.ofSeconds(20), Duration.ofSeconds(3), Duration.ofNanos(50_000), 64 * 1024, 64 << 20);
        // rank 0 (TLS) connects to rank 1 (plain), which greets with the plain handshake
        PeerTransport[] ts = job(new Auth[] {tls(keys), Auth.of(SECRET)}, null, opts, null);
        try (Arena arena = Arena.ofShared()) {
            assertThatThrownBy(() -> ts[0].send(0, 1, 1, arena.allocate(8)).await())
                    .isInstanceOf(HcommException.class)
                    .hasMessageContaining("without HCOMM_TLS");
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    private static boolean contains(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) if (hay[i + j] != needle[j]) continue outer;
            return true;
        }
        return false;
    }

    /**
     * A TCP relay on loopback: forwards every connection to the target, records the first bytes each way, and (if
     * {@code flipAt} >= 0) inverts the byte at that offset of the first connection's forward stream, once.
     */
    static final class Relay implements AutoCloseable {
        private static final int KEEP = 4 << 20;
        private final ServerSocketChannel server;
        private final long flipAt;
        private volatile InetSocketAddress target;
        private final ByteArrayOutputStream seen = new ByteArrayOutputStream();
        private final AtomicLong flips = new AtomicLong();
        private final List<SocketChannel> open = new java.util.concurrent.CopyOnWriteArrayList<>();
        private volatile boolean closed;

        Relay(long flipAt) throws IOException {
            this.flipAt = flipAt;
            server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread.ofPlatform().daemon().name("relay").start(this::acceptLoop);
        }

        void target(InetSocketAddress t) {
            target = t;
        }

        InetSocketAddress address() {
            try {
                return (InetSocketAddress) server.getLocalAddress();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        synchronized byte[] seen() {
            return seen.toByteArray();
        }

        long flipped() {
            return flips.get();
        }

        private void acceptLoop() {
            boolean first = true;
            while (!closed) {
                try {
                    SocketChannel in = server.accept();
                    SocketChannel out = SocketChannel.open(target);
                    open.add(in);
                    open.add(out);
                    long flip = first ? flipAt : -1;
                    first = false;
                    Thread.ofPlatform().daemon().start(() -> pump(in, out, flip));
                    Thread.ofPlatform().daemon().start(() -> pump(out, in, -1));
                } catch (IOException e) {
                    return;
                }
            }
        }

        private void pump(SocketChannel from, SocketChannel to, long flipAt) {
            ByteBuffer b = ByteBuffer.allocate(64 * 1024);
            long offset = 0;
            try {
                while (true) {
                    b.clear();
                    int n = from.read(b);
                    if (n < 0) break;
                    b.flip();
                    if (flipAt >= offset && flipAt < offset + n) {
                        int at = (int) (flipAt - offset);
                        b.put(at, (byte) ~b.get(at));
                        flips.incrementAndGet();
                    }
                    synchronized (this) {
                        if (seen.size() < KEEP) seen.write(b.array(), 0, Math.min(n, KEEP - seen.size()));
                    }
                    offset += n;
                    while (b.hasRemaining()) to.write(b);
                }
            } catch (IOException e) {
                // one side went: close both
            } finally {
                try {
                    from.close();
                    to.close();
                } catch (IOException ignored) {
                    // closing anyway
                }
            }
        }

        @Override
        public void close() throws IOException {
            closed = true;
            server.close();
            for (SocketChannel c : open) c.close();
        }
    }
}
