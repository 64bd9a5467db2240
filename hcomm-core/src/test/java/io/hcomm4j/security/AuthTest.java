package io.hcomm4j.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.HcommException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The secret policy as {@link Auth} holds it: no short secrets, no secret means loopback, and who can talk to whom. */
@Timeout(30)
class AuthTest {
    private static final String SECRET = "auth-test-secret-0001";

    @Test
    void secretsShorterThanSixteenBytesAreRefused() {
        assertThatThrownBy(() -> Auth.of("fifteen-bytes!!")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the job secret is 15 bytes long").hasMessageContaining("16 bytes required")
                .hasMessageContaining("hcomm secret").hasMessageNotContaining("fifteen-bytes!!");
        assertThatThrownBy(() -> Auth.of("")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0 bytes");
        assertThatThrownBy(() -> Auth.of(null)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("missing");
        // bytes of UTF-8, not characters: eight two-byte letters are enough
        assertThat(Auth.of("éééééééé").hasSecret()).isTrue();
        assertThat(Auth.of("sixteen-bytes-ok").hasSecret()).isTrue();
        assertThat(Auth.newSecret()).hasSize(48);
        assertThatCode(() -> Auth.of(Auth.newSecret())).doesNotThrowAnyException();
    }

    @Test
    void withoutASecretOnlyLoopbackAddressesMayListen() throws Exception {
        Auth local = Auth.forJob(null, false);
        assertThat(local.hasSecret()).isFalse();
        assertThat(local.isUnauthenticated()).isFalse();
        local.checkListen(InetAddress.getByName("127.0.0.1"), "the test listener");
        local.checkListen(InetAddress.getByName("::1"), "the test listener");
        assertThatThrownBy(() -> local.checkListen(InetAddress.getByName("192.0.2.7"), "the test listener"))
                .isInstanceOf(HcommException.class)
                .hasMessageContaining("no job secret is set").hasMessageContaining("the test listener would listen on 192.0.2.7")
                .hasMessageContaining("HCOMM_SECRET").hasMessageContaining("CommConfig.builder().secret(")
                .hasMessageContaining("hcomm launch").hasMessageContaining("HCOMM_AUTH=none");
        assertThatThrownBy(() -> local.checkListen(InetAddress.getByName("0.0.0.0"), "the test listener"))
                .isInstanceOf(HcommException.class).hasMessageContaining("every interface (0.0.0.0)");
        assertThatThrownBy(() -> local.checkListen(null, "the test listener"))
                .isInstanceOf(HcommException.class).hasMessageContaining("an unresolved address");

        // a secret, or the unauthenticated mode chosen by name, may listen anywhere
        Auth.forJob(SECRET, false).checkListen(InetAddress.getByName("0.0.0.0"), "x");
        Auth.forJob(SECRET, true).checkListen(InetAddress.getByName("192.0.2.7"), "x");
        assertThat(Auth.forJob(SECRET, true).hasSecret()).as("a secret wins over HCOMM_AUTH=none").isTrue();
        Auth open = Auth.forJob(null, true);
        assertThat(open.isUnauthenticated()).isTrue();
        open.checkListen(InetAddress.getByName("0.0.0.0"), "x");
    }

    @Test
    void theKeyWithoutASecretIsPublicAndAnySecretDiffersFromIt() throws Exception {
        // both ways without a secret share one public key: they agree with each other
        assertThat(handshake(Auth.loopbackOnly(), Auth.unauthenticated())).isNull();
        assertThat(handshake(Auth.of(SECRET), Auth.of(SECRET))).isNull();
        // a secret on one side only, or two different ones: refused both ways
        assertThat(handshake(Auth.of(SECRET), Auth.loopbackOnly())).isInstanceOf(Auth.AuthException.class);
        assertThat(handshake(Auth.unauthenticated(), Auth.of(SECRET))).isInstanceOf(Auth.AuthException.class);
        assertThat(handshake(Auth.of(SECRET), Auth.of("another-auth-secret-2"))).isInstanceOf(Auth.AuthException.class);
    }

    /** Runs one handshake on loopback: {@code acceptor} accepts, {@code initiator} connects; the initiator's failure, or null. */
    private static Exception handshake(Auth acceptor, Auth initiator) throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
            CompletableFuture<Void> accepted = CompletableFuture.runAsync(() -> {
                try (SocketChannel ch = server.accept()) {
                    acceptor.accept(ch, Auth.STORE, Duration.ofSeconds(5));
                } catch (Exception e) {
                    // its failure shows as the initiator's
                }
            });
            try (SocketChannel ch = SocketChannel.open(server.getLocalAddress())) {
                initiator.connect(ch, Auth.STORE, Duration.ofSeconds(5));
                return null;
            } catch (Exception e) {
                return e;
            } finally {
                accepted.get(10, TimeUnit.SECONDS);
            }
        }
    }
}
