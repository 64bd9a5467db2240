package io.hcomm4j.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.hcomm4j.CommConfig;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@link Bootstrap#join(CommConfig, Map)} with hand-made launcher environments; every socket on 127.0.0.1. */
@Timeout(30)
class BootstrapTest {
    private static final String SECRET = "bootstrap-secret";

    private static CommConfig.Builder config() {
        return CommConfig.builder().secret(SECRET).initTimeout(Duration.ofSeconds(10));
    }

    @Test
    void tcpInitRankZeroHostsAndFourRanksShareOneStore() throws Exception {
        int port = TestPorts.freePort();
        int n = 4;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        List<Bootstrap.Joined> joined = new ArrayList<>();
        try {
            List<Future<Bootstrap.Joined>> fs = new ArrayList<>();
            // Higher ranks first: they must retry until rank 0's server is up.
            for (int r = n - 1; r >= 0; r--) {
                CommConfig c = config().initMethod("tcp://127.0.0.1:" + port).rank(r).worldSize(n).build();
                fs.add(pool.submit(() -> {
                    Bootstrap.Joined j = Bootstrap.join(c, Map.of());
                    j.store().set("addr/" + j.rank(), j.dataAddress().getHostAddress().getBytes(UTF_8));
                    j.store().add("arrived", 1);
                    j.store().await(List.of("addr/0", "addr/1", "addr/2", "addr/3"), Duration.ofSeconds(10));
                    return j;
                }));
                if (r == n - 1) Thread.sleep(50);
            }
            for (Future<Bootstrap.Joined> f : fs) joined.add(f.get(20, TimeUnit.SECONDS));
            for (Bootstrap.Joined j : joined) {
                assertThat(j.worldSize()).isEqualTo(n);
                assertThat(j.dataAddress().getHostAddress()).isEqualTo("127.0.0.1");
                assertThat(j.store()).isInstanceOf(TcpStore.class);
                assertThat(j.owned() != null).as("rank %d owns a server", j.rank()).isEqualTo(j.rank() == 0);
                assertThat(j.store().tryGet("arrived")).isEqualTo("4".getBytes(UTF_8));
            }
            assertThat(joined).extracting(Bootstrap.Joined::rank).containsExactlyInAnyOrder(0, 1, 2, 3);
            TcpStoreServer server = (TcpStoreServer) joined.stream().filter(j -> j.rank() == 0).findFirst().orElseThrow().owned();
            assertThat(server.address().getPort()).isEqualTo(port);
            assertThat(server.address().getAddress().getHostAddress()).isEqualTo("127.0.0.1");
        } finally {
            pool.shutdownNow();
            for (Bootstrap.Joined j : joined) j.store().close();
            for (Bootstrap.Joined j : joined) if (j.owned() != null) j.owned().close();
            assertThat(pool.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void envInitUsesMasterAddrAndPortAndTheConfiguredStorePortWins() throws Exception {
        int port = TestPorts.freePort();
        Bootstrap.Joined j = Bootstrap.join(config().build(),
                Map.of("RANK", "0", "WORLD_SIZE", "1", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(port)));
        try {
            assertThat(((TcpStoreServer) j.owned()).address().getPort()).isEqualTo(port);
            j.store().set("k", new byte[] {1});
        } finally {
            j.store().close();
            j.owned().close();
        }
        // under torchrun MASTER_PORT is torch's own store: HCOMM_STORE_PORT points elsewhere
        try (ServerSocket torchStore = new ServerSocket(0, 1, TestPorts.LOOPBACK)) {
            int ours = TestPorts.freePort();
            Bootstrap.Joined k = Bootstrap.join(config().storePort(ours).build(), Map.of("RANK", "0", "WORLD_SIZE", "1",
                    "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(torchStore.getLocalPort())));
            try {
                assertThat(((TcpStoreServer) k.owned()).address().getPort()).isEqualTo(ours);
            } finally {
                k.store().close();
                k.owned().close();
            }
        }
    }

    @Test
    void envInitWithoutMasterVariablesNamesThem() {
        Map<String, String> env = Map.of("RANK", "0", "WORLD_SIZE", "2");
        assertThatThrownBy(() -> Bootstrap.join(config().build(), env)).isInstanceOf(HcommException.class)
                .hasMessageContaining("MASTER_ADDR and MASTER_PORT are not set");
        assertThatThrownBy(() -> Bootstrap.join(config().storePort(1234).build(), env)).isInstanceOf(HcommException.class)
                .hasMessageContaining("MASTER_ADDR is not set");
        assertThatThrownBy(() -> Bootstrap.join(config().build(),
                Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "http")))
                .isInstanceOf(HcommException.class).hasMessageContaining("MASTER_PORT 'http'");
    }

    @Test
    void hostedStoreIsNotStartedByRankZero() {
        try (TcpStoreServer launcher = TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, 0), SECRET);
             TcpStore view = TcpStore.connect(launcher.address(), SECRET, Duration.ofSeconds(5))) {
            CommConfig c = config().storeHosted(true).storePort(launcher.address().getPort()).build();
            Bootstrap.Joined j = Bootstrap.join(c, Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1"));
            try {
                assertThat(j.owned()).isNull();
                j.store().set("from-rank-0", new byte[] {5});
                assertThat(view.tryGet("from-rank-0")).containsExactly(5);
            } finally {
                j.store().close();
            }
        }
    }

    @Test
    void rankWithoutAStoreTimesOutNamingTheAddress() {
        int port = TestPorts.freePort();
        CommConfig c = config().initMethod("tcp://127.0.0.1:" + port).rank(1).worldSize(2)
                .initTimeout(Duration.ofMillis(300)).build();
        assertThatThrownBy(() -> Bootstrap.join(c, Map.of())).isInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("127.0.0.1:" + port);
    }

    @Test
    void rankZeroThatCannotListenSaysWhere() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, TestPorts.LOOPBACK)) {
            CommConfig c = config().initMethod("tcp://127.0.0.1:" + taken.getLocalPort()).rank(0).worldSize(2).build();
            assertThatThrownBy(() -> Bootstrap.join(c, Map.of())).isInstanceOf(HcommException.class)
                    .hasMessageContaining("rank 0 serves the store but cannot listen on 127.0.0.1:" + taken.getLocalPort());
        }
    }

    @Test
    void wrongSecretOnOneRankIsReported() {
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, 0), SECRET)) {
            CommConfig c = CommConfig.builder().secret("another-job-secret-1").initMethod("tcp://127.0.0.1:" + server.address().getPort())
                    .rank(1).worldSize(2).initTimeout(Duration.ofSeconds(20)).build();
            assertThatThrownBy(() -> Bootstrap.join(c, Map.of())).isInstanceOf(HcommException.class)
                    .isNotInstanceOf(CommTimeoutException.class).hasMessageContaining("secret");
        }
    }

    @Test
    void fileInitUsesAFileStoreAndAConcreteDataAddress(@TempDir Path dir) {
        CommConfig c = config().initMethod("file://" + dir.resolve("store")).rank(0).worldSize(1).build();
        Bootstrap.Joined j = Bootstrap.join(c, Map.of());
        try {
            assertThat(j.store()).isInstanceOf(FileStore.class);
            assertThat(j.owned()).isNull();
            assertThat(j.dataAddress().isAnyLocalAddress()).isFalse();
            j.store().set("k", new byte[] {1});
            assertThat(new FileStore(dir.resolve("store")).tryGet("k")).containsExactly(1);
        } finally {
            j.store().close();
        }
    }

    @Test
    void dataAddressFromSocketAddrOrInterface(@TempDir Path dir) throws Exception {
        String init = "file://" + dir;
        Bootstrap.Joined a = Bootstrap.join(config().initMethod(init).rank(0).worldSize(1).socketAddr("127.0.0.1").build(), Map.of());
        a.store().close();
        assertThat(a.dataAddress().getHostAddress()).isEqualTo("127.0.0.1");

        NetworkInterface lo = NetworkInterface.getByInetAddress(TestPorts.LOOPBACK);
        assumeThat(lo).as("an interface holds 127.0.0.1").isNotNull();
        Bootstrap.Joined b = Bootstrap.join(config().initMethod(init).rank(0).worldSize(1).socketIfname(lo.getName()).build(), Map.of());
        b.store().close();
        assertThat(b.dataAddress().getHostAddress()).isEqualTo("127.0.0.1");
    }

    @Test
    void badDataAddressSettingsAreExplained(@TempDir Path dir) throws Exception {
        String init = "file://" + dir;
        assertThatThrownBy(() -> Bootstrap.join(config().initMethod(init).rank(0).worldSize(1).socketIfname("nosuch0").build(), Map.of()))
                .isInstanceOf(HcommException.class).hasMessageContaining("'nosuch0'")
                .hasMessageContaining(NetworkInterface.getByInetAddress(TestPorts.LOOPBACK).getName());
        assertThatThrownBy(() -> Bootstrap.join(config().initMethod(init).rank(0).worldSize(1).socketAddr("0.0.0.0").build(), Map.of()))
                .isInstanceOf(HcommException.class).hasMessageContaining("wildcard");
    }

    @Test
    void badDataAddressFailsBeforeAStoreServerIsStarted() {
        int port = TestPorts.freePort();
        CommConfig c = config().initMethod("tcp://127.0.0.1:" + port).rank(0).worldSize(2).socketIfname("nosuch0").build();
        assertThatThrownBy(() -> Bootstrap.join(c, Map.of())).isInstanceOf(HcommException.class);
        // the port is free again: nothing was left listening
        try (TcpStoreServer s = TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, port), SECRET)) {
            assertThat(s.address().getPort()).isEqualTo(port);
        }
    }

    @Test
    void parsesTcpInitMethods() {
        InetSocketAddress v4 = Bootstrap.parseTcp("tcp://127.0.0.1:29500");
        assertThat(v4.getPort()).isEqualTo(29500);
        assertThat(v4.getAddress().getHostAddress()).isEqualTo("127.0.0.1");
        InetSocketAddress v6 = Bootstrap.parseTcp("tcp://[::1]:1234/");
        assertThat(v6.getPort()).isEqualTo(1234);
        assertThat(v6.getAddress().isLoopbackAddress()).isTrue();
        assertThatThrownBy(() -> Bootstrap.parseTcp("tcp://127.0.0.1")).isInstanceOf(HcommException.class)
                .hasMessageContaining("port");
        assertThatThrownBy(() -> Bootstrap.parseTcp("tcp://127.0.0.1:99999")).isInstanceOf(HcommException.class)
                .hasMessageContaining("99999");
    }
}
