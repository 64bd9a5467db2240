package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.management.UnixOperatingSystemMXBean;
import io.hcomm4j.HcommException;
import io.hcomm4j.security.Auth;
import io.hcomm4j.testing.LiveThreads;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Strangers and broken frames against a {@link TcpStoreServer} that good clients are using: each stranger is
 * turned away and logged, the server keeps serving, and the good clients' results stay exact.
 */
@Timeout(30)
class TcpStoreSecurityTest {
    private static final String SECRET = "job-secret-1234-5678";
    /** Short, so the silent client is dropped within the test; the production default is 10 s. */
    private static final Duration HANDSHAKE = Duration.ofMillis(500);

    private TcpStoreServer server;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void start() {
        server = TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, 0), SECRET, HANDSHAKE);
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : toClose) c.close();
        server.close();
        assertThat(server.liveThreads()).isZero();
    }

    private TcpStore good() {
        TcpStore s = TcpStore.connect(server.address(), SECRET, Duration.ofSeconds(5));
        toClose.add(s);
        return s;
    }

    private SocketChannel raw() throws IOException {
        SocketChannel ch = SocketChannel.open(server.address());
        toClose.add(ch);
        return ch;
    }

    /** A raw connection that passed the handshake, to send hand-made frames. */
    private SocketChannel authenticated() throws IOException {
        SocketChannel ch = raw();
        Auth.of(SECRET).connect(ch, Auth.STORE, Duration.ofSeconds(5));
        return ch;
    }

    /** True once the server has closed {@code ch}: reads hit EOF or a reset within {@code within}. */
    private static boolean closedByServer(SocketChannel ch, Duration within) throws IOException {
        ch.socket().setSoTimeout((int) within.toMillis());
        byte[] buf = new byte[8192];
        try {
            var in = ch.socket().getInputStream();
            while (true) {
                if (in.read(buf) < 0) return true;
            }
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // connection reset: the server closed with our unread bytes pending
        }
    }

    @Test
    void strangersAreTurnedAwayWhileGoodClientsKeepExactResults() throws Exception {
        int goodClients = 4;
        int rounds = 300;
        List<TcpStore> clients = new ArrayList<>();
        for (int i = 0; i < goodClients; i++) clients.add(good());
        ExecutorService pool = Executors.newFixedThreadPool(goodClients);
        String log;
        try {
            log = captureStderr(() -> {
                List<Future<?>> work = new ArrayList<>();
                for (int i = 0; i < goodClients; i++) {
                    TcpStore c = clients.get(i);
                    int id = i;
                    work.add(pool.submit(() -> {
                        for (int r = 0; r < rounds; r++) {
                            c.add("sum", 1);
                            byte[] v = ("c" + id + "-" + r).getBytes(UTF_8);
                            c.set("own-" + id, v);
                            assertThat(c.get("own-" + id, Duration.ofSeconds(5))).isEqualTo(v);
                        }
                        return null;
                    }));
                }
                try {
                    // (a) no secret, (b) wrong secret: refused with a clear error, not retried until the deadline
                    assertThatThrownBy(() -> TcpStore.connect(server.address(), null, Duration.ofSeconds(20)))
                            .isInstanceOf(HcommException.class).hasMessageContaining("secret");
                    assertThatThrownBy(() -> TcpStore.connect(server.address(), "a-wrong-guess-0001", Duration.ofSeconds(20)))
                            .isInstanceOf(HcommException.class).hasMessageContaining("secret");
                    // (c) 4 KiB of random bytes
                    SocketChannel noise = raw();
                    byte[] junk = new byte[4096];
                    new Random(42).nextBytes(junk);
                    noise.write(ByteBuffer.wrap(junk));
                    assertThat(closedByServer(noise, Duration.ofSeconds(5))).as("random bytes: closed").isTrue();
                    // (d) connects and says nothing: dropped at the handshake deadline
                    SocketChannel silent = raw();
                    long t0 = System.nanoTime();
                    assertThat(closedByServer(silent, Duration.ofSeconds(5))).as("silence: closed").isTrue();
                    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(HANDSHAKE.plusSeconds(2));
                    for (Future<?> f : work) f.get(20, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
        }
        TcpStore fresh = good();
        assertThat(fresh.tryGet("sum")).isEqualTo(Integer.toString(goodClients * rounds).getBytes(UTF_8));
        for (int i = 0; i < goodClients; i++) {
            assertThat(fresh.tryGet("own-" + i)).isEqualTo(("c" + i + "-" + (rounds - 1)).getBytes(UTF_8));
        }
        // (a) and (b) each made up to 3 attempts before giving up; (c) and (d) one each
        assertThat(server.rejectedConnections()).isGreaterThanOrEqualTo(4);
        assertThat(log).contains("refused a store connection from");
    }

    @Test
    void oversizedAndMalformedFramesCloseOnlyThatConnection() throws Exception {
        TcpStore bystander = good();
        bystander.set("before", new byte[] {1});
        List<Consumer<DataOutputStream>> frames = List.of(
                out -> frame(out, d -> { d.writeByte(OP_SET); d.writeInt(Integer.MAX_VALUE); }),
                out -> frame(out, d -> { d.writeByte(OP_SET); d.writeInt(MAX_KEY_BYTES + 1); }),
                out -> frame(out, d -> { d.writeByte(OP_SET); d.writeInt(-1); }),
                out -> frame(out, d -> { d.writeByte(OP_SET); d.writeInt(0); }),
                out -> frame(out, d -> { d.writeByte(OP_SET); writeBytes(d, "k".getBytes(UTF_8)); d.writeInt(1 << 30); }),
                out -> frame(out, d -> { d.writeByte(OP_SET); writeBytes(d, "k".getBytes(UTF_8)); d.writeInt(MAX_VALUE_BYTES + 1); }),
                out -> frame(out, d -> { d.writeByte(OP_WAIT); d.writeLong(10); d.writeInt(Integer.MAX_VALUE); }),
                out -> frame(out, d -> { d.writeByte(OP_GET); d.writeLong(-5); }),
                out -> frame(out, d -> { d.writeByte(OP_CAS); writeBytes(d, "k".getBytes(UTF_8)); d.writeByte(7); }),
                out -> frame(out, d -> d.writeByte(99)));
        long rejectedBefore = server.rejectedConnections();
        for (int i = 0; i < frames.size(); i++) {
            SocketChannel ch = authenticated();
            DataOutputStream out = new DataOutputStream(ch.socket().getOutputStream());
            frames.get(i).accept(out);
            out.flush();
            assertThat(closedByServer(ch, Duration.ofSeconds(3))).as("frame #%d closes the connection", i).isTrue();
        }
        assertThat(server.rejectedConnections() - rejectedBefore).isEqualTo(frames.size());
        assertThat(bystander.tryGet("k")).as("nothing half-stored").isNull();
        assertThat(bystander.tryGet("before")).containsExactly(1);
        assertThat(good().add("after", 1)).isEqualTo(1);
    }

    @Test
    void closeEndsEveryThreadAndConnection() throws Exception {
        int port = server.address().getPort();
        TcpStore waiting = good();
        TcpStore idle = good();
        idle.set("x", new byte[] {1});
        var blocked = java.util.concurrent.CompletableFuture.runAsync(() -> waiting.get("never", Duration.ofSeconds(20)));
        SocketChannel silent = raw();
        Thread.sleep(100);
        assertThat(server.liveThreads()).isGreaterThanOrEqualTo(4);
        assertThat(LiveThreads.named("hcomm-store-conn-" + port + "-")).isNotEmpty();

        server.close();
        server.close();
        assertThat(server.liveThreads()).isZero();
        assertThat(Thread.getAllStackTraces().keySet()).noneMatch(t -> t.getName().startsWith("hcomm-store-acceptor-" + port));
        // virtual threads included
        assertThat(LiveThreads.named("hcomm-store-conn-" + port + "-")).isEmpty();
        assertThat(LiveThreads.named("hcomm-store-acceptor-" + port)).isEmpty();
        assertThat(closedByServer(silent, Duration.ofSeconds(3))).isTrue();
        assertThatThrownBy(() -> blocked.get(5, TimeUnit.SECONDS)).hasCauseInstanceOf(HcommException.class);
        assertThatThrownBy(() -> idle.tryGet("x")).isInstanceOf(HcommException.class)
                .hasMessageContaining("127.0.0.1:" + port);
    }

    @Test
    void manyConnectionsLeaveNoFileDescriptorsBehind() throws Exception {
        var os = ManagementFactory.getOperatingSystemMXBean();
        if (!(os instanceof UnixOperatingSystemMXBean unix)) return;
        churn(5); // warm up: classes, JIT, buffers
        long before = unix.getOpenFileDescriptorCount();
        churn(40);
        long after = unix.getOpenFileDescriptorCount();
        assertThat(after).isLessThanOrEqualTo(before + 3);
    }

    private void churn(int n) throws Exception {
        TcpStoreServer s = TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, 0), SECRET, HANDSHAKE);
        try {
            for (int i = 0; i < n; i++) {
                try (TcpStore c = TcpStore.connect(s.address(), SECRET, Duration.ofSeconds(5))) {
                    c.add("n", 1);
                }
                try (SocketChannel junk = SocketChannel.open(s.address())) {
                    junk.write(ByteBuffer.wrap(new byte[200]));
                    closedByServer(junk, Duration.ofSeconds(3));
                }
            }
            // an open client and a silent stranger still connected when the server closes
            TcpStore open = TcpStore.connect(s.address(), SECRET, Duration.ofSeconds(5));
            SocketChannel silent = SocketChannel.open(s.address());
            s.close();
            open.close();
            silent.close();
        } finally {
            s.close();
        }
    }

    private interface FrameWriter {
        void write(DataOutputStream out) throws IOException;
    }

    private static void frame(DataOutputStream out, FrameWriter w) {
        try {
            w.write(out);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    /** Runs {@code body} with System.err captured (slf4j-simple logs there) and returns what was written. */
    private static String captureStderr(Runnable body) {
        PrintStream original = System.err;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setErr(new PrintStream(new TeeStream(buf, original), true, UTF_8));
        try {
            body.run();
        } finally {
            System.setErr(original);
        }
        return buf.toString(UTF_8);
    }

    private static final class TeeStream extends java.io.OutputStream {
        private final java.io.OutputStream a;
        private final java.io.OutputStream b;

        TeeStream(java.io.OutputStream a, java.io.OutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public synchronized void write(int x) throws IOException {
            a.write(x);
            b.write(x);
        }

        @Override
        public synchronized void write(byte[] x, int off, int len) throws IOException {
            a.write(x, off, len);
            b.write(x, off, len);
        }
    }
}
