package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.bootstrap.TcpStore;
import io.hcomm4j.bootstrap.TcpStoreServer;
import io.hcomm4j.security.Auth;
import io.hcomm4j.security.JobKeys;
import io.hcomm4j.testing.CollectiveWorker;
import io.hcomm4j.testing.Ranks;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HCOMM_TLS from the environment, as a user turns it on: a job of processes whose store and data connections all run
 * under TLS gives exact collectives; the store refuses a client without TLS and names the cause to a client with TLS
 * against a plain store; a bad TLS setting fails the config, naming the setting.
 */
class TlsJobTest {
    private static final String SECRET = "tls-job-test-secret-0123456789";

    @TempDir
    static Path dir;
    static TlsConfig keys;
    static Path passwordFile;

    @BeforeAll
    static void makeKeys() throws IOException {
        keys = JobKeys.create(dir.resolve("job"));
        passwordFile = dir.resolve("job").resolve(JobKeys.PASSWORD_FILE);
    }

    private static Map<String, String> tlsEnv() {
        Map<String, String> env = new HashMap<>();
        env.put("HCOMM_TLS", "1");
        env.put("HCOMM_TLS_KEYSTORE", keys.keyStore().toString());
        env.put("HCOMM_TLS_KEYSTORE_PASSWORD_FILE", passwordFile.toString());
        return env;
    }

    /**
     * A job of three processes with HCOMM_TLS from the environment (store and data links under TLS) runs the seeded
     * collective sequences, every element checked. TLS 1.3 renews a connection's keys (a KeyUpdate message) after so
     * many bytes: 2^37 for AES-GCM by default, which no test reaches; here every 64 KiB (the JDK's security property
     * jdk.tls.keyLimits, in the ranks' JVMs), so both directions of every link renew their keys thousands of times
     * while the collectives run.
     */
    @Test
    void aJobOfProcessesRunsItsCollectivesUnderTlsWithKeyUpdates() throws Exception {
        Path props = Files.writeString(dir.resolve("key-limits.security"),
                "jdk.tls.keyLimits=AES/GCM/NoPadding KeyUpdate 2^16, ChaCha20-Poly1305 KeyUpdate 2^16\n");
        Map<String, String> env = tlsEnv();
        env.put("HCOMM_TRANSPORT", "tcp");
        env.put("JDK_JAVA_OPTIONS", "-Djava.security.properties=" + props); // -Djavax.net.debug=ssl:handshake shows them: 1,760 KeyUpdate lines in rank 0
        List<Ranks.Outcome> out = Ranks.run(3, CollectiveWorker.class, env, Duration.ofMinutes(3), "1813");
        for (Ranks.Outcome o : out) {
            assertThat(o.output()).contains("rank " + o.rank() + " PASS reductions", "rank " + o.rank() + " PASS data movement");
        }
        Ranks.assertTransports(out, "tls");
    }

    @Test
    void theStoreServesTlsClientsAndRefusesPlainOnes() {
        Auth tls = Auth.of(SECRET, keys);
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), tls);
             TcpStore client = TcpStore.connect(server.address(), tls, Duration.ofSeconds(10), Duration.ZERO)) {
            client.set("k", "v".getBytes(StandardCharsets.UTF_8));
            assertThat(new String(client.get("k", Duration.ofSeconds(5)), StandardCharsets.UTF_8)).isEqualTo("v");
            assertThatThrownBy(() -> TcpStore.connect(server.address(), Auth.of(SECRET), Duration.ofSeconds(1), Duration.ZERO).close())
                    .isInstanceOf(HcommException.class);
            // the good client goes on
            assertThat(client.add("n", 2)).isEqualTo(2);
        }
    }

    @Test
    void aTlsClientOfAPlainStoreIsToldWhy() {
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), Auth.of(SECRET))) {
            assertThatThrownBy(() -> TcpStore.connect(server.address(), Auth.of(SECRET, keys), Duration.ofSeconds(3), Duration.ZERO).close())
                    .isInstanceOf(HcommException.class)
                    .hasMessageContaining("without HCOMM_TLS");
        }
    }

    @Test
    void badTlsSettingsFailTheConfigNamingTheSetting() throws IOException {
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_TLS", "1"), k -> null).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("HCOMM_TLS_KEYSTORE");
        Map<String, String> noPassword = new HashMap<>(tlsEnv());
        noPassword.remove("HCOMM_TLS_KEYSTORE_PASSWORD_FILE");
        assertThatThrownBy(() -> CommConfig.builderFrom(noPassword, k -> null).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("HCOMM_TLS_KEYSTORE_PASSWORD");
        Map<String, String> wrong = new HashMap<>(tlsEnv());
        wrong.remove("HCOMM_TLS_KEYSTORE_PASSWORD_FILE");
        wrong.put("HCOMM_TLS_KEYSTORE_PASSWORD", "not-the-password");
        assertThatThrownBy(() -> CommConfig.builderFrom(wrong, k -> null).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("wrong password");
        Map<String, String> missing = new HashMap<>(tlsEnv());
        missing.put("HCOMM_TLS_KEYSTORE", dir.resolve("nowhere.p12").toString());
        assertThatThrownBy(() -> CommConfig.builderFrom(missing, k -> null).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("HCOMM_TLS_KEYSTORE").hasMessageContaining("nowhere.p12");
        Path garbage = Files.writeString(dir.resolve("garbage.p12"), "not a key store");
        Map<String, String> notPkcs12 = new HashMap<>(tlsEnv());
        notPkcs12.put("HCOMM_TLS_TRUSTSTORE", garbage.toString());
        assertThatThrownBy(() -> CommConfig.builderFrom(notPkcs12, k -> null).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("HCOMM_TLS_TRUSTSTORE");
        CommConfig ok = CommConfig.builderFrom(tlsEnv(), k -> null).build();
        assertThat(ok.tls()).isPresent();
        assertThat(ok.tls().get().keyStore()).isEqualTo(keys.keyStore());
        assertThat(ok.toString()).contains("tls=TLS 1.3").doesNotContain(new String(keys.keyStorePassword()));
    }
}
