package io.hcomm4j.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static io.hcomm4j.bootstrap.StoreProtocol.hostPort;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link TcpStore} against a {@link TcpStoreServer} on 127.0.0.1: the store contract plus connection behaviour. */
class TcpStoreTest extends StoreContractTest {
    static final String SECRET = "test-job-secret-0001";
    private TcpStoreServer server;

    @BeforeEach
    void startServer() {
        server = TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, 0), SECRET);
    }

    @AfterEach
    void stopServer() {
        closeStores();
        server.close();
        assertThat(server.liveThreads()).isZero();
    }

    @Override
    protected Store connect() {
        return TcpStore.connect(server.address(), SECRET, Duration.ofSeconds(5));
    }

    @Test
    void localAddressIsTheInterfaceThatReachesTheServer() {
        TcpStore s = (TcpStore) store();
        assertThat(s.localAddress()).isEqualTo(TestPorts.LOOPBACK);
        assertThat(s.address()).isEqualTo(server.address());
    }

    @Test
    void clientStartedBeforeTheServerConnectsOnceItListens() throws Exception {
        int port = TestPorts.freePort();
        InetSocketAddress addr = new InetSocketAddress(TestPorts.LOOPBACK, port);
        CompletableFuture<TcpStore> client = CompletableFuture.supplyAsync(
                () -> TcpStore.connect(addr, SECRET, Duration.ofSeconds(10)));
        Thread.sleep(300);
        assertThat(client).isNotDone();
        try (TcpStoreServer late = TcpStoreServer.start(addr, SECRET);
             TcpStore s = client.get(5, TimeUnit.SECONDS)) {
            s.set("k", new byte[] {9});
            assertThat(s.tryGet("k")).containsExactly(9);
            assertThat(s.address().getPort()).isEqualTo(late.address().getPort());
        }
    }

    @Test
    void connectWithoutServerTimesOutNamingTheAddress() {
        int port = TestPorts.freePort();
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> TcpStore.connect(new InetSocketAddress("127.0.0.1", port),
                SECRET, Duration.ofMillis(400)))
                .isInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("127.0.0.1:" + port);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isBetween(350L, 3000L);
    }

    @Test
    void aListenerThatIsNotAStoreIsCalledOut() throws Exception {
        // like torch's own store on MASTER_PORT: accepts, then waits for the client to speak first
        try (java.net.ServerSocket other = new java.net.ServerSocket(0, 4, TestPorts.LOOPBACK)) {
            assertThatThrownBy(() -> TcpStore.connect(new InetSocketAddress("127.0.0.1", other.getLocalPort()), SECRET,
                    Duration.ofMillis(300)))
                    .isInstanceOf(CommTimeoutException.class)
                    .hasMessageContaining("127.0.0.1:" + other.getLocalPort())
                    .hasMessageContaining("did not speak the HComm4J handshake");
        }
    }

    @Test
    void wrongSecretIsReportedQuicklyNotRetriedUntilTheDeadline() {
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> TcpStore.connect(server.address(), "not-the-job-secret-1", Duration.ofSeconds(30)))
                .isInstanceOf(HcommException.class)
                .isNotInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("secret")
                .hasMessageContaining(hostPort(server.address()));
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(10));
    }

    @Test
    void oneClientSharedByManyThreadsIsThreadSafe() throws Exception {
        Store shared = store();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int id = t;
                fs.add(pool.submit(() -> {
                    for (int i = 0; i < 200; i++) {
                        shared.add("shared", 1);
                        shared.set("t" + id, Integer.toString(i).getBytes(UTF_8));
                        assertThat(shared.get("t" + id, Duration.ofSeconds(5))).isEqualTo(Integer.toString(i).getBytes(UTF_8));
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) f.get(20, TimeUnit.SECONDS);
            assertThat(shared.tryGet("shared")).isEqualTo("1600".getBytes(UTF_8));
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void waitingCallsQueuedBehindAnotherThreadStillHonourTheirDeadline() throws Exception {
        Store shared = store();
        CompletableFuture<byte[]> longWait = CompletableFuture.supplyAsync(() -> shared.get("slow", Duration.ofSeconds(10)));
        Thread.sleep(100);
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> shared.get("other", Duration.ofMillis(200))).isInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("other");
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(3));
        store().set("slow", new byte[] {1});
        assertThat(longWait.get(5, TimeUnit.SECONDS)).containsExactly(1);
    }

    @Test
    void lostConnectionNamesTheStoreAddress() throws Exception {
        Store s = store();
        s.set("k", new byte[] {1});
        CompletableFuture<byte[]> waiting = CompletableFuture.supplyAsync(() -> s.get("never", Duration.ofSeconds(20)));
        Thread.sleep(100);
        server.close();
        assertThatThrownBy(() -> waiting.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(HcommException.class).isNotInstanceOf(CommTimeoutException.class)
                .hasMessageContaining(hostPort(server.address()));
        assertThatThrownBy(() -> s.tryGet("k")).isInstanceOf(HcommException.class)
                .hasMessageContaining(hostPort(server.address()));
    }
}
