package io.hcomm4j.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.security.AcceptGate;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * The TCP store server lets connections in through the same {@link AcceptGate} as a rank's data listener (issue 18,
 * "limits that hold"): idle connections from several addresses fill at most {@code pending} places, one address gets at
 * most {@code perSource} (the rest are closed before the handshake), clients go on meanwhile, a client whose address is
 * at its cap connects once places free up (it was refused, not judged a wrong secret), and nothing stays pending.
 */
class StoreAcceptFloodTest {
    private static final String SECRET = "store-flood-test-secret-0123";
    /** A long handshake deadline: the idle flood holds its places until the test closes it, however slow the machine. */
    private static final AcceptGate.Limits LIMITS = new AcceptGate.Limits(24, 8, Duration.ofSeconds(120));

    @Test
    void capsHoldAndClientsGoOn() throws Exception {
        List<Socket> flood = new ArrayList<>();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, 0), SECRET, LIMITS);
             TcpStore client = TcpStore.connect(server.address(), SECRET, Duration.ofSeconds(20))) {
            AcceptGate gate = server.gate();
            // 8 idle connections from each of 127.0.0.2 .. 127.0.0.5 (32): 24 get places, the others wait in the backlog
            for (int i = 0; i < 32; i++) flood.add(connect(server, 2 + i % 4));
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> gate.pending() == LIMITS.pending());
            client.set("k", "v".getBytes(UTF_8)); // an authenticated client is not held up
            assertThat(client.get("k", Duration.ofSeconds(10))).isEqualTo("v".getBytes(UTF_8));
            assertThat(gate.refusals()).as("nobody refused for the listener's cap").isZero();
            for (Socket s : flood) s.close();
            flood.clear();
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> gate.pending() == 0);

            // 12 from the client's own address (127.0.0.1): 8 places, 4 closed before the server's first byte
            for (int i = 0; i < 12; i++) flood.add(connect(server, 1));
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> gate.refusals() >= 4);
            assertThat(gate.pending(InetAddress.getByName("127.0.0.1"))).isEqualTo(LIMITS.perSource());
            int closedAtOnce = 0;
            for (Socket s : flood) {
                s.setSoTimeout(20_000);
                try (InputStream in = s.getInputStream()) {
                    if (in.read() < 0) closedAtOnce++; // else the server's challenge: it has a place
                } catch (java.net.SocketException e) {
                    closedAtOnce++;
                }
            }
            assertThat(closedAtOnce).isEqualTo(4);
            flood.clear();
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> gate.pending() == 0);

            // the address at its cap again: a new client is refused (more than the 3 drops that mean a wrong secret), then gets in
            for (int i = 0; i < 8; i++) flood.add(connect(server, 1));
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> gate.pending() == 8);
            long before = gate.refusals();
            CompletableFuture<TcpStore> late = CompletableFuture.supplyAsync(() -> TcpStore.connect(server.address(), SECRET, Duration.ofSeconds(60)));
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> gate.refusals() > before + StoreConnection.MAX_HANDSHAKE_DROPS);
            assertThat(late).isNotDone();
            for (Socket s : flood) s.close();
            flood.clear();
            try (TcpStore second = late.get()) {
                assertThat(second.get("k", Duration.ofSeconds(10))).isEqualTo("v".getBytes(UTF_8));
            }
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> gate.pending() == 0);
        } finally {
            for (Socket s : flood) s.close();
        }
    }

    /** An idle connection to the store from 127.0.0.{@code host}. */
    private static Socket connect(TcpStoreServer server, int host) throws Exception {
        Socket s = new Socket();
        s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0." + host), 0));
        s.connect(server.address(), 5000);
        return s;
    }
}
