package io.hcomm4j.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.hcomm4j.CommConfig;
import io.hcomm4j.DataType;
import io.hcomm4j.HcommException;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.StoreServer;
import io.hcomm4j.security.Auth;
import io.hcomm4j.testing.Ranks;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.TransportOptions;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18's secret policy at init: without a secret every listener is on loopback and a job that needs another address
 * fails before it listens or connects, saying how to set a secret; {@code HCOMM_AUTH=none} lifts that, with a warning.
 */
@Timeout(60)
class SecretPolicyTest {
    /** A documentation address (RFC 5737): never this host's, never reached; the policy refuses it before any socket. */
    private static final String ELSEWHERE = "192.0.2.77";

    private static CommConfig.Builder noSecret() {
        return CommConfig.builder().initTimeout(Duration.ofSeconds(10));
    }

    @Test
    void withoutASecretTheStoreAndTheDataListenerAreOnLoopback(@TempDir Path dir) throws Exception {
        // rank 0 serves the store on the loopback address it was given
        int port = TestPorts.freePort();
        Bootstrap.Joined j = Bootstrap.join(noSecret().initMethod("tcp://127.0.0.1:" + port).rank(0).worldSize(1).build(), Map.of());
        try {
            assertThat(((TcpStoreServer) j.owned()).address().getAddress().isLoopbackAddress()).isTrue();
            assertThat(j.dataAddress().isLoopbackAddress()).isTrue();
        } finally {
            j.store().close();
            j.owned().close();
        }
        // a file store says nothing about addresses: the data address is loopback, not the host's name
        Bootstrap.Joined f = Bootstrap.join(noSecret().initMethod("file://" + dir).rank(0).worldSize(1).build(), Map.of());
        f.store().close();
        assertThat(f.dataAddress().isLoopbackAddress()).isTrue();

        // the data listener binds there, and nowhere else
        var opts = new TransportOptions(Duration.ofSeconds(5), Duration.ofSeconds(5), Duration.ofNanos(50_000), 64 * 1024, 64 << 20);
        PeerTransport t = PeerTransport.open(0, 1, f.dataAddress(), Bootstrap.auth(noSecret().build()), 42, opts);
        try {
            assertThat(t.listenAddress().getAddress().isLoopbackAddress()).isTrue();
        } finally {
            t.close();
        }
        assertThatThrownBy(() -> PeerTransport.open(3, 4, InetAddress.getByName(ELSEWHERE), Auth.loopbackOnly(), 42, opts))
                .isInstanceOf(HcommException.class).hasMessageContaining("rank 3's data listener would listen on " + ELSEWHERE)
                .hasMessageContaining("HCOMM_SECRET");
    }

    @Test
    void withoutASecretANonLoopbackAddressFailsInitNamingTheSettingAndTheWaysOut() {
        int port = TestPorts.freePort();
        // the data address, set by address
        assertThatThrownBy(() -> Bootstrap.join(noSecret().initMethod("tcp://127.0.0.1:" + port).rank(0).worldSize(2)
                .socketAddr(ELSEWHERE).build(), Map.of()))
                .isInstanceOf(HcommException.class)
                .hasMessageContaining("the data address " + ELSEWHERE + " (HCOMM_SOCKET_ADDR) is not a loopback address")
                .hasMessageContaining("HCOMM_SECRET").hasMessageContaining("hcomm secret")
                .hasMessageContaining("CommConfig.builder().secret(").hasMessageContaining("hcomm launch")
                .hasMessageContaining("HCOMM_AUTH=none");
        // nothing was left listening: the port is free
        try (TcpStoreServer s = TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, port), (String) null)) {
            assertThat(s.address().getPort()).isEqualTo(port);
        }
        // the store's address, from the init method or from MASTER_ADDR
        assertThatThrownBy(() -> Bootstrap.join(noSecret().initMethod("tcp://" + ELSEWHERE + ":29500").rank(0).worldSize(2).build(), Map.of()))
                .isInstanceOf(HcommException.class)
                .hasMessageContaining("the store's address " + ELSEWHERE + ":29500 (initMethod tcp://" + ELSEWHERE + ":29500)")
                .hasMessageContaining("HCOMM_SECRET");
        assertThatThrownBy(() -> Bootstrap.join(noSecret().initTimeout(Duration.ofMinutes(2)).build(),
                Map.of("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", ELSEWHERE, "MASTER_PORT", "29500")))
                .as("refused at once, not after the init timeout spent connecting")
                .isInstanceOf(HcommException.class).hasMessageContaining("(MASTER_ADDR:MASTER_PORT) is not a loopback address");
        // a name that does not resolve is no loopback address either
        assertThatThrownBy(() -> Bootstrap.join(noSecret().initMethod("tcp://no-such-host.invalid:29500").rank(1).worldSize(2).build(), Map.of()))
                .isInstanceOf(HcommException.class).hasMessageContaining("no-such-host.invalid:29500");
        // with a secret, the same address is taken (binding it is then the network's business)
        Bootstrap.Joined j = Bootstrap.join(noSecret().secret("policy-test-secret-01").socketAddr(ELSEWHERE)
                .initMethod("tcp://127.0.0.1:" + port).rank(0).worldSize(1).build(), Map.of());
        j.store().close();
        StoreProtocol.closeQuietly(j.owned());
        assertThat(j.dataAddress().getHostAddress()).isEqualTo(ELSEWHERE);
    }

    @Test
    void storeServersWithoutASecretListenOnLoopbackOnlyUnlessStartedUnauthenticated() {
        assertThatThrownBy(() -> TcpStoreServer.start(new InetSocketAddress("0.0.0.0", 0), (String) null))
                .isInstanceOf(HcommException.class).hasMessageContaining("the store would listen on every interface (0.0.0.0)");
        assertThatThrownBy(() -> StoreServer.start(new InetSocketAddress("0.0.0.0", 0), null))
                .isInstanceOf(HcommException.class).hasMessageContaining("HCOMM_AUTH=none");
        assertThatThrownBy(() -> StoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, 0), "short"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("the store's secret is 5 bytes long");
        try (StoreServer local = StoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, 0), null);
             StoreServer open = StoreServer.startUnauthenticated(new InetSocketAddress("0.0.0.0", 0))) {
            assertThat(local.address().getAddress().isLoopbackAddress()).isTrue();
            assertThat(open.address().getAddress().isAnyLocalAddress()).isTrue();
            for (StoreServer s : new StoreServer[] {local, open}) {
                try (TcpStore c = TcpStore.connect(new InetSocketAddress(TestPorts.LOOPBACK, s.address().getPort()), (String) null,
                        Duration.ofSeconds(10))) {
                    c.set("k", "v".getBytes(UTF_8));
                    assertThat(c.tryGet("k")).isEqualTo("v".getBytes(UTF_8));
                }
            }
        }
    }

    @Test
    void theUnauthenticatedModeIsChosenByNameWarnsOnceAndListensBeyondLoopback() throws Exception {
        InetAddress nic = nonLoopbackAddress();
        Bootstrap.forgetAuthNotices();
        String log = captureStderr(() -> {
            Bootstrap.auth(noSecret().unauthenticated().build());
            Bootstrap.auth(noSecret().unauthenticated().build());
        });
        assertThat(log.split("HCOMM_AUTH=none and no job secret", -1)).as("one warning:\n%s", log).hasSize(2);
        assertThat(log).contains("WARN").contains("not authenticated");
        // with a secret there is nothing to warn about
        Bootstrap.forgetAuthNotices();
        assertThat(captureStderr(() -> Bootstrap.auth(noSecret().unauthenticated().secret("policy-test-secret-01").build())))
                .doesNotContain("HCOMM_AUTH=none and no job secret");

        // a two-rank job on a non-loopback address, store and data, with no secret at all
        assumeThat(nic).as("a non-loopback IPv4 address on this host").isNotNull();
        int port = TestPorts.freePort();
        String host = nic.getHostAddress();
        Ranks.runThreads(2, port, Duration.ofSeconds(60), b -> b.secret(null).unauthenticated()
                .initMethod("tcp://" + host + ":" + port).socketAddr(host), h -> {
                    long[] v = {h.world().rank() + 1};
                    h.world().allReduce(java.lang.foreign.MemorySegment.ofArray(v), DataType.INT64, ReduceOp.SUM);
                    assertThat(v[0]).isEqualTo(3);
                });
    }

    private static InetAddress nonLoopbackAddress() throws Exception {
        for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (!n.isUp() || n.isLoopback()) continue;
            for (InetAddress a : Collections.list(n.getInetAddresses())) {
                if (a instanceof Inet4Address && !a.isLoopbackAddress() && !a.isLinkLocalAddress()) return a;
            }
        }
        return null;
    }

    private static String captureStderr(Runnable body) {
        PrintStream original = System.err;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setErr(new PrintStream(buf, true, UTF_8));
        try {
            body.run();
        } finally {
            System.setErr(original);
        }
        String out = buf.toString(UTF_8);
        original.print(out);
        return out;
    }
}
