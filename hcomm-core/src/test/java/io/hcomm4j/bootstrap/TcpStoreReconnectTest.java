package io.hcomm4j.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link TcpStore} clients with a reconnect budget against a real {@link TcpStoreServer} that is stopped and started
 * again on the same port (a restart: the new server is empty), or behind a {@link CuttingProxy} that breaks a
 * connection between a request and its reply (no restart: the server kept its data). Every value and counter is read
 * back from the server by a fresh client.
 */
@Timeout(60)
class TcpStoreReconnectTest {
    private static final String SECRET = "reconnect-secret";
    private static final Duration BUDGET = Duration.ofSeconds(20);
    private final List<AutoCloseable> opened = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) opened.get(i).close();
        for (AutoCloseable c : opened) {
            if (c instanceof TcpStore s) assertThat(s.watcherAlive()).as("watcher of %s after close", s).isFalse();
            if (c instanceof TcpStoreServer s) assertThat(s.liveThreads()).isZero();
        }
    }

    private <T extends AutoCloseable> T keep(T c) {
        opened.add(c);
        return c;
    }

    private TcpStoreServer serve(int port) {
        return keep(TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, port), SECRET));
    }

    private TcpStore client(InetSocketAddress at, Duration reconnect) {
        return keep(TcpStore.connect(at, SECRET, Duration.ofSeconds(10), reconnect));
    }

    /** Polls a fresh client's view of {@code key} until it equals {@code expected} (or 10 s pass). */
    private static String eventually(InetSocketAddress at, String key, String expected) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        String seen = null;
        try (TcpStore viewer = TcpStore.connect(at, SECRET, Duration.ofSeconds(10))) {
            while (System.nanoTime() < deadline) {
                byte[] v = viewer.tryGet(key);
                seen = v == null ? null : new String(v, UTF_8);
                if (expected.equals(seen)) return seen;
                Thread.sleep(20);
            }
        }
        return seen;
    }

    @Test
    void idleClientsWriteBackTheirKeysAndCountersWhenTheStoreRestarts() throws Exception {
        int port = TestPorts.freePort();
        TcpStoreServer first = serve(port);
        InetSocketAddress at = first.address();
        TcpStore a = client(at, BUDGET);
        TcpStore b = client(at, BUDGET);
        a.set("addr/0", "10.0.0.1 4000".getBytes(UTF_8));
        a.set("addr/0", "10.0.0.1 4001".getBytes(UTF_8)); // the last value counts
        a.set("gone", new byte[] {1});
        assertThat(a.delete("gone")).isTrue();
        assertThat(a.add("joined", 3)).isEqualTo(3);
        assertThat(b.add("joined", 4)).isEqualTo(7);
        assertThat(b.add("generation/1", 1)).isEqualTo(1);
        b.set("addr/1", "10.0.0.2 4000".getBytes(UTF_8));
        assertThat(b.compareAndSet("decision", null, "[3]".getBytes(UTF_8))).isEqualTo("[3]".getBytes(UTF_8));
        long oldIncarnation = first.incarnation();

        first.close();
        Thread.sleep(300); // both clients idle while nothing listens: their watchers find the connection gone
        long t0 = System.nanoTime();
        TcpStoreServer second = serve(port);
        assertThat(second.incarnation()).isNotEqualTo(oldIncarnation);

        // nobody called a or b: their watchers reconnected and wrote everything back
        assertThat(eventually(at, "addr/0", "10.0.0.1 4001")).isEqualTo("10.0.0.1 4001");
        assertThat(eventually(at, "addr/1", "10.0.0.2 4000")).isEqualTo("10.0.0.2 4000");
        assertThat(eventually(at, "joined", "7")).isEqualTo("7");
        System.out.printf("TcpStoreReconnectTest: two idle clients wrote their keys and counters back %d ms after the store "
                + "was started again%n", (System.nanoTime() - t0) / 1_000_000);
        assertThat(eventually(at, "generation/1", "1")).isEqualTo("1");
        assertThat(eventually(at, "decision", "[3]")).isEqualTo("[3]");
        try (TcpStore viewer = TcpStore.connect(at, SECRET, Duration.ofSeconds(10))) {
            assertThat(viewer.tryGet("gone")).as("a deleted key stays deleted").isNull();
        }
        assertThat(a.restartsSeen()).isEqualTo(1);
        assertThat(b.restartsSeen()).isEqualTo(1);
        // and the counters go on from where they were
        assertThat(a.add("joined", 1)).isEqualTo(8);
        assertThat(b.add("generation/1", 1)).isEqualTo(2);
    }

    @Test
    void aCallWaitingWhileTheStoreRestartsCompletesAgainstTheNewOne() throws Exception {
        int port = TestPorts.freePort();
        TcpStoreServer first = serve(port);
        InetSocketAddress at = first.address();
        TcpStore waiter = client(at, BUDGET);
        TcpStore setter = client(at, BUDGET);
        waiter.set("mine", "before".getBytes(UTF_8));
        CompletableFuture<byte[]> waiting = CompletableFuture.supplyAsync(() -> waiter.get("late", Duration.ofSeconds(30)));
        TcpStore third = client(at, BUDGET);
        CompletableFuture<Void> awaiting = CompletableFuture.runAsync(() -> third.await(List.of("mine", "late"), Duration.ofSeconds(30)));
        Thread.sleep(300);

        first.close();
        Thread.sleep(500); // the waiting calls find nothing listening for a while: backoff
        serve(port);
        setter.set("late", "after".getBytes(UTF_8));

        assertThat(waiting.get(20, TimeUnit.SECONDS)).isEqualTo("after".getBytes(UTF_8));
        awaiting.get(20, TimeUnit.SECONDS); // "mine" came back from the waiter's journal, "late" from the setter
        assertThat(waiter.get("mine", Duration.ofSeconds(5))).isEqualTo("before".getBytes(UTF_8));
        assertThat(waiter.restartsSeen()).isEqualTo(1);
    }

    @Test
    void anAddWhoseReplyWasLostIsAppliedOnce() throws Exception {
        TcpStoreServer server = serve(0);
        CuttingProxy proxy = keep(new CuttingProxy(server.address()));
        TcpStore s = client(proxy.address(), BUDGET);
        assertThat(s.add("counter", 5)).isEqualTo(5);

        proxy.cutNextReply(); // the server applies the next add, its reply never arrives
        assertThat(s.add("counter", 1)).isEqualTo(6);
        assertThat(proxy.cuts.get()).isEqualTo(1);
        assertThat(s.restartsSeen()).isZero();
        try (TcpStore viewer = TcpStore.connect(server.address(), SECRET, Duration.ofSeconds(10))) {
            assertThat(new String(viewer.tryGet("counter"), UTF_8)).as("applied once, not twice").isEqualTo("6");
        }

        proxy.cutNextReply(); // the same for a compare-and-set: decided once, and the winner learns it won
        assertThat(s.compareAndSet("decision", null, "mine".getBytes(UTF_8))).isEqualTo("mine".getBytes(UTF_8));
        assertThat(proxy.cuts.get()).isEqualTo(2);
        assertThat(s.add("counter", 1)).isEqualTo(7);
    }

    @Test
    void anAddTheServerNeverSawIsSentAgain() throws Exception {
        TcpStoreServer server = serve(0);
        CuttingProxy proxy = keep(new CuttingProxy(server.address()));
        TcpStore s = client(proxy.address(), BUDGET);
        assertThat(s.add("counter", 5)).isEqualTo(5);

        proxy.cutNextRequest(); // the next add never reaches the server
        assertThat(s.add("counter", 1)).isEqualTo(6);
        assertThat(proxy.cuts.get()).isEqualTo(1);
        try (TcpStore viewer = TcpStore.connect(server.address(), SECRET, Duration.ofSeconds(10))) {
            assertThat(new String(viewer.tryGet("counter"), UTF_8)).isEqualTo("6");
        }
    }

    @Test
    void aStoreThatStaysAwayFailsCallsAfterTheBudgetNamingItsAddress() throws Exception {
        int port = TestPorts.freePort();
        TcpStoreServer server = serve(port);
        TcpStore s = client(server.address(), Duration.ofSeconds(1));
        s.set("k", new byte[] {1});
        server.close();

        // a waiting call whose own deadline comes first: a timeout that says why, and the client keeps trying
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> s.get("k", Duration.ofMillis(300))).isInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("127.0.0.1:" + port).hasMessageContaining("unreachable");
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(2));
        // then the budget runs out: this call and every later one fail, naming the store and the setting
        assertThatThrownBy(() -> s.set("k", new byte[] {2})).isInstanceOf(HcommException.class)
                .isNotInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("127.0.0.1:" + port).hasMessageContaining("HCOMM_STORE_RECONNECT");
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(5));
        assertThatThrownBy(() -> s.tryGet("k")).isInstanceOf(HcommException.class).hasMessageContaining("could not reconnect within 1000 ms");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (s.watcherAlive() && System.nanoTime() < deadline) Thread.sleep(10);
        assertThat(s.watcherAlive()).as("the watcher ends once the client gave up").isFalse();
    }

    @Test
    void closeEndsTheWatcherAndAReconnectInProgressAtOnce() throws Exception {
        TcpStoreServer server = serve(0);
        TcpStore s = TcpStore.connect(server.address(), SECRET, Duration.ofSeconds(10), BUDGET);
        assertThat(s.watcherAlive()).isTrue();
        server.close();
        CompletableFuture<Void> reconnecting = CompletableFuture.runAsync(() -> s.set("k", new byte[] {1}));
        Thread.sleep(300);
        long t0 = System.nanoTime();
        s.close();
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(1));
        assertThatThrownBy(() -> reconnecting.get(2, TimeUnit.SECONDS)).hasCauseInstanceOf(HcommException.class)
                .hasMessageContaining("closed");
        assertThat(s.watcherAlive()).isFalse();
    }

    @Test
    void anInterruptedCallFailsAndTheNextOneReconnects() throws Exception {
        TcpStoreServer server = serve(0);
        TcpStore s = client(server.address(), BUDGET);
        assertThat(s.add("counter", 1)).isEqualTo(1);
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                s.get("never", Duration.ofSeconds(30));
                outcome.complete(null);
            } catch (Throwable e) {
                outcome.complete(e);
            }
        });
        Thread.sleep(200);
        t.interrupt();
        assertThat(outcome.get(5, TimeUnit.SECONDS)).isInstanceOf(HcommException.class).hasMessageContaining("interrupted");
        // the interrupt closed the connection; the next call makes a new one, and the server's data is as it was
        assertThat(s.add("counter", 1)).isEqualTo(2);
        assertThat(s.restartsSeen()).isZero();
    }

    @Test
    void withoutABudgetALostConnectionIsFinalAsBefore() {
        TcpStoreServer server = serve(0);
        TcpStore s = client(server.address(), Duration.ZERO);
        assertThat(s.watcherAlive()).isFalse();
        s.set("k", new byte[] {1});
        server.close();
        assertThatThrownBy(() -> s.tryGet("k")).isInstanceOf(HcommException.class)
                .hasMessageContaining(StoreProtocol.hostPort(server.address()));
    }
}
