package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CommConfigTest {
    @Test
    void durationsAndSizesParse() {
        assertThat(CommConfig.parseDuration("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(CommConfig.parseDuration("3s")).isEqualTo(Duration.ofSeconds(3));
        assertThat(CommConfig.parseDuration("2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(CommConfig.parseDuration("1h")).isEqualTo(Duration.ofHours(1));
        assertThat(CommConfig.parseDuration("100us")).isEqualTo(Duration.ofNanos(100_000));
        assertThat(CommConfig.parseDuration("7")).isEqualTo(Duration.ofSeconds(7));
        assertThat(CommConfig.parseDuration("1.5s")).isEqualTo(Duration.ofMillis(1500));
        assertThatThrownBy(() -> CommConfig.parseDuration("soon")).hasMessageContaining("'soon' is not a duration");
        assertThatThrownBy(() -> CommConfig.parseDuration("3 fortnights")).hasMessageContaining("unknown unit");
        assertThat(CommConfig.parseSize("4096")).isEqualTo(4096);
        assertThat(CommConfig.parseSize("64K")).isEqualTo(65536);
        assertThat(CommConfig.parseSize("64KiB")).isEqualTo(65536);
        assertThat(CommConfig.parseSize("1M")).isEqualTo(1 << 20);
        assertThat(CommConfig.parseSize("2G")).isEqualTo(2L << 30);
        assertThatThrownBy(() -> CommConfig.parseSize("lots")).hasMessageContaining("not a size");
    }

    @Test
    void environmentThenSystemPropertyThenBuilder() {
        Map<String, String> env = Map.of("HCOMM_TIMEOUT", "3s", "HCOMM_EAGER_LIMIT", "32K", "HCOMM_SECRET", "secret-from-the-env",
                "HCOMM_STORE_HOSTED", "1");
        Map<String, String> props = Map.of("hcomm.timeout", "9s", "hcomm.spin.time", "0");
        CommConfig c = CommConfig.builderFrom(env, props::get).build();
        assertThat(c.timeout()).isEqualTo(Duration.ofSeconds(9));
        assertThat(c.eagerLimit()).isEqualTo(32 * 1024);
        assertThat(c.secret()).contains("secret-from-the-env");
        assertThat(c.storeHosted()).isTrue();
        assertThat(c.spinTime()).isZero();
        CommConfig overridden = CommConfig.builderFrom(env, props::get).timeout(Duration.ofMillis(1)).build();
        assertThat(overridden.timeout()).isEqualTo(Duration.ofMillis(1));
        assertThat(c.toString()).doesNotContain("secret-from-the-env");
    }

    @Test
    void secretsShorterThanSixteenBytesAreRefusedNamingTheSettingButNotTheValue() {
        assertThatThrownBy(() -> CommConfig.builder().secret("too-short").build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("secret (HCOMM_SECRET) is 9 bytes long").hasMessageContaining("16 bytes required")
                .hasMessageContaining("openssl rand -hex 24").hasMessageNotContaining("too-short");
        assertThatThrownBy(() -> CommConfig.builder().secret("").build()).hasMessageContaining("0 bytes");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_SECRET", "from-the-env"), k -> null).build())
                .hasMessageContaining("HCOMM_SECRET").hasMessageNotContaining("from-the-env");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of(), Map.of("hcomm.secret", "from-a-property")::get).build())
                .hasMessageContaining("15 bytes").hasMessageNotContaining("from-a-property");
        assertThat(CommConfig.builder().secret("exactly-16-bytes").build().secret()).contains("exactly-16-bytes");
        assertThat(CommConfig.builder().build().secret()).isEmpty();
    }

    @Test
    void theUnauthenticatedModeIsChosenByName() {
        assertThat(CommConfig.builder().build().unauthenticated()).isFalse();
        assertThat(CommConfig.builder().unauthenticated().build().unauthenticated()).isTrue();
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_AUTH", "none"), k -> null).build().unauthenticated()).isTrue();
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_AUTH", "NONE"), k -> null).build().toString()).contains("auth=none");
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_AUTH", "secret"), k -> null).build().unauthenticated()).isFalse();
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_AUTH", "none"), Map.of("hcomm.auth", "secret")::get).build()
                .unauthenticated()).as("the property wins").isFalse();
        // a boolean does not choose it: only the name does
        for (String v : new String[] {"0", "off", "false", "no"}) {
            assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_AUTH", v), k -> null))
                    .hasMessageContaining("HCOMM_AUTH").hasMessageContaining("not one of secret, none");
        }
        // a secret is used even so (a launcher's secret over a site-wide HCOMM_AUTH=none)
        CommConfig both = CommConfig.builderFrom(Map.of("HCOMM_AUTH", "none", "HCOMM_SECRET", "secret-from-the-env"), k -> null).build();
        assertThat(both.secret()).contains("secret-from-the-env");
    }

    @Test
    void badValuesNameTheSetting() {
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_TIMEOUT", "soon"), k -> null).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("HCOMM_TIMEOUT").hasMessageContaining("hcomm.timeout");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_RANK", "x"), k -> null).build())
                .hasMessageContaining("HCOMM_RANK").hasMessageContaining("not an integer");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_STORE_HOSTED", "maybe"), k -> null).build())
                .hasMessageContaining("HCOMM_STORE_HOSTED");
        assertThatThrownBy(() -> CommConfig.builder().initMethod("udp://x").build()).hasMessageContaining("initMethod");
        assertThatThrownBy(() -> CommConfig.builder().rank(4).worldSize(4).build()).hasMessageContaining("rank 4");
        assertThatThrownBy(() -> CommConfig.builder().worldSize(0).build()).hasMessageContaining("worldSize");
        assertThatThrownBy(() -> CommConfig.builder().timeout(Duration.ZERO).build()).hasMessageContaining("timeout");
        assertThatThrownBy(() -> CommConfig.builder().eagerLimit(1L << 30).build()).hasMessageContaining("eagerLimit");
        assertThatThrownBy(() -> CommConfig.builder().unexpectedLimit(10).build()).hasMessageContaining("unexpectedLimit");
        assertThatThrownBy(() -> CommConfig.builder().memPoolMax(0).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessage("memPoolMax must be in [4K, 1P], was 0");
        assertThatThrownBy(() -> CommConfig.builder().memPoolMax(4095).build()).hasMessageContaining("memPoolMax");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_MEM_POOL_MAX", "lots"), k -> null).build())
                .hasMessageContaining("HCOMM_MEM_POOL_MAX").hasMessageContaining("hcomm.mem.pool.max").hasMessageContaining("not a size");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_MEM_DEBUG", "maybe"), k -> null).build())
                .hasMessageContaining("HCOMM_MEM_DEBUG").hasMessageContaining("not a boolean");
        assertThatThrownBy(() -> CommConfig.builder().shmDir(" ").build()).hasMessage("shmDir must not be empty");
    }

    /** Issue 18's limits: defaults, environment and system properties, and bad values named. */
    @Test
    void limitSettings() {
        CommConfig d = CommConfig.builder().build();
        assertThat(d.unexpectedTotal()).isEqualTo(1L << 30);
        assertThat(d.unexpectedCount()).isEqualTo(1 << 20);
        assertThat(d.acceptPending()).isEqualTo(256);
        assertThat(d.acceptPendingPerSource()).isEqualTo(64);
        assertThat(d.handshakeTimeout()).isEqualTo(Duration.ofSeconds(10));
        Map<String, String> env = Map.of("HCOMM_UNEXPECTED_TOTAL", "2G", "HCOMM_UNEXPECTED_COUNT", "4096", "HCOMM_ACCEPT_PENDING", "32",
                "HCOMM_ACCEPT_PENDING_PER_SOURCE", "4", "HCOMM_HANDSHAKE_TIMEOUT", "2s");
        CommConfig c = CommConfig.builderFrom(env, Map.of("hcomm.accept.pending.per.source", "8")::get).build();
        assertThat(c.unexpectedTotal()).isEqualTo(2L << 30);
        assertThat(c.unexpectedCount()).isEqualTo(4096);
        assertThat(c.acceptPending()).isEqualTo(32);
        assertThat(c.acceptPendingPerSource()).isEqualTo(8);
        assertThat(c.handshakeTimeout()).isEqualTo(Duration.ofSeconds(2));
        assertThatThrownBy(() -> CommConfig.builder().unexpectedTotal(1 << 20).build()).hasMessageContaining("HCOMM_UNEXPECTED_TOTAL");
        assertThatThrownBy(() -> CommConfig.builder().unexpectedCount(10).build()).hasMessageContaining("HCOMM_UNEXPECTED_COUNT");
        assertThatThrownBy(() -> CommConfig.builder().acceptPending(0).build()).hasMessageContaining("HCOMM_ACCEPT_PENDING");
        assertThatThrownBy(() -> CommConfig.builder().acceptPending(16).acceptPendingPerSource(17).build())
                .hasMessageContaining("HCOMM_ACCEPT_PENDING_PER_SOURCE");
        assertThatThrownBy(() -> CommConfig.builder().handshakeTimeout(Duration.ofMillis(5)).build()).hasMessageContaining("HCOMM_HANDSHAKE_TIMEOUT");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_UNEXPECTED_COUNT", "many"), k -> null).build())
                .hasMessageContaining("HCOMM_UNEXPECTED_COUNT").hasMessageContaining("not an integer");
        assertThat(d.resendLogFrames()).isEqualTo(1 << 22);
        assertThat(d.resendLogBytes()).isEqualTo(1L << 30);
        CommConfig r = CommConfig.builderFrom(Map.of("HCOMM_RESEND_LOG_FRAMES", "65536", "HCOMM_RESEND_LOG_BYTES", "32M",
                "HCOMM_UNEXPECTED_LIMIT", "4M"), k -> null).build();
        assertThat(r.resendLogFrames()).isEqualTo(65536);
        assertThat(r.resendLogBytes()).isEqualTo(32L << 20);
        assertThatThrownBy(() -> CommConfig.builder().resendLogFrames(5000).build()).hasMessageContaining("HCOMM_RESEND_LOG_FRAMES");
        assertThatThrownBy(() -> CommConfig.builder().resendLogBytes(2L << 30).build()).hasMessageContaining("HCOMM_RESEND_LOG_BYTES");
        // smaller than what the default credit (64 MiB) lets a peer leave unacknowledged
        assertThatThrownBy(() -> CommConfig.builder().resendLogBytes(64L << 20).build()).hasMessageContaining("twice HCOMM_UNEXPECTED_LIMIT");
        assertThatThrownBy(() -> CommConfig.builder().resendLogFrames(1 << 16).build()).hasMessageContaining("HCOMM_UNEXPECTED_LIMIT / 64");
        // without reconnects there is no log: a large credit is fine
        assertThat(CommConfig.builder().retryMax(0).unexpectedLimit(1L << 30).unexpectedTotal(2L << 30).build().unexpectedLimit()).isEqualTo(1L << 30);
    }

    @Test
    void joinIsOffUnlessTheLauncherSetsIt() {
        assertThat(CommConfig.builder().build().join()).isFalse();
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_JOIN", "1"), k -> null).build().join()).isTrue();
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_JOIN", "1"), Map.of("hcomm.join", "false")::get).build().join()).isFalse();
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_JOIN", "yes please"), k -> null).build())
                .hasMessageContaining("HCOMM_JOIN");
    }

    @Test
    void memoryPoolSettings() {
        CommConfig defaults = CommConfig.builder().build();
        assertThat(defaults.memPoolMax()).isEqualTo(4L << 30);
        assertThat(defaults.shmDir()).isEqualTo("/dev/shm");
        assertThat(defaults.memDebug()).isFalse();
        Map<String, String> env = Map.of("HCOMM_MEM_POOL_MAX", "512M", "HCOMM_SHM_DIR", "/tmp/env-shm", "HCOMM_MEM_DEBUG", "1");
        CommConfig fromEnv = CommConfig.builderFrom(env, k -> null).build();
        assertThat(fromEnv.memPoolMax()).isEqualTo(512L << 20);
        assertThat(fromEnv.shmDir()).isEqualTo("/tmp/env-shm");
        assertThat(fromEnv.memDebug()).isTrue();
        Map<String, String> props = Map.of("hcomm.mem.pool.max", "2G", "hcomm.shm.dir", "/tmp/prop-shm", "hcomm.mem.debug", "false");
        CommConfig fromProps = CommConfig.builderFrom(env, props::get).build();
        assertThat(fromProps.memPoolMax()).isEqualTo(2L << 30);
        assertThat(fromProps.shmDir()).isEqualTo("/tmp/prop-shm");
        assertThat(fromProps.memDebug()).isFalse();
        CommConfig built = CommConfig.builderFrom(env, props::get).memPoolMax(64 * 1024).shmDir("/dev/shm").memDebug(true).build();
        assertThat(built.memPoolMax()).isEqualTo(64 * 1024);
        assertThat(built.shmDir()).isEqualTo("/dev/shm");
        assertThat(built.memDebug()).isTrue();
        assertThat(built.toString()).contains("memPoolMax=65536", "shmDir=/dev/shm", "memDebug=true");
    }

    @Test
    void transportSettings() {
        CommConfig defaults = CommConfig.builder().build();
        assertThat(defaults.transport()).isEqualTo(CommConfig.Transport.AUTO);
        assertThat(defaults.hostId()).isEmpty();
        assertThat(defaults.shmRingSize()).isEqualTo(1 << 20);
        Map<String, String> env = Map.of("HCOMM_TRANSPORT", "TCP", "HCOMM_HOST_ID", "node-7", "HCOMM_SHM_RING_SIZE", "256K");
        CommConfig fromEnv = CommConfig.builderFrom(env, k -> null).build();
        assertThat(fromEnv.transport()).isEqualTo(CommConfig.Transport.TCP);
        assertThat(fromEnv.hostId()).contains("node-7");
        assertThat(fromEnv.shmRingSize()).isEqualTo(256 * 1024);
        Map<String, String> props = Map.of("hcomm.transport", "shm", "hcomm.host.id", "node-8", "hcomm.shm.ring.size", "4M");
        CommConfig fromProps = CommConfig.builderFrom(env, props::get).build();
        assertThat(fromProps.transport()).isEqualTo(CommConfig.Transport.SHM);
        assertThat(fromProps.hostId()).contains("node-8");
        assertThat(fromProps.shmRingSize()).isEqualTo(4 << 20);
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_TRANSPORT", "auto"), k -> null).build().transport()).isEqualTo(CommConfig.Transport.AUTO);
        assertThat(fromProps.toString()).contains("transport=shm", "hostId=node-8", "shmRingSize=4194304");
        CommConfig hybrid = CommConfig.builderFrom(Map.of("HCOMM_TRANSPORT", "auto-ucx"), k -> null).build();
        assertThat(hybrid.transport()).isEqualTo(CommConfig.Transport.AUTO_UCX);
        assertThat(hybrid.toString()).contains("transport=auto-ucx");
        assertThat(CommConfig.Transport.AUTO_UCX.sharedMemoryWithinHost()).isTrue();
        assertThat(CommConfig.Transport.AUTO_UCX.usesUcx()).isTrue();
        assertThat(CommConfig.Transport.UCX.sharedMemoryWithinHost()).isFalse();
        assertThat(CommConfig.Transport.AUTO.usesUcx()).isFalse();
        assertThat(CommConfig.Transport.TCP.sharedMemoryWithinHost()).isFalse();
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_TRANSPORT", "udp"), k -> null).build())
                .hasMessageContaining("HCOMM_TRANSPORT").hasMessageContaining("hcomm.transport").hasMessageContaining("not one of auto, tcp, shm, ucx, auto-ucx");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_SHM_RING_SIZE", "100K"), k -> null).build())
                .hasMessageContaining("HCOMM_SHM_RING_SIZE").hasMessageContaining("power of two in [64K, 1G]");
        assertThatThrownBy(() -> CommConfig.builder().shmRingSize(32 * 1024).build()).hasMessageContaining("shmRingSize");
        assertThatThrownBy(() -> CommConfig.builder().shmRingSize(2L << 30).build()).hasMessageContaining("shmRingSize");
        assertThatThrownBy(() -> CommConfig.builder().hostId("a b").build()).hasMessageContaining("hostId");
        assertThatThrownBy(() -> CommConfig.builder().transport(null).build()).isInstanceOf(NullPointerException.class);
    }

    @Test
    void faultToleranceSettings() {
        CommConfig defaults = CommConfig.builder().build();
        assertThat(defaults.heartbeatTimeout()).isEqualTo(Duration.ofSeconds(10));
        assertThat(defaults.heartbeatInterval()).isEqualTo(Duration.ofMillis(2500));
        assertThat(defaults.stuckReport()).isEqualTo(Duration.ofSeconds(60));
        Map<String, String> env = Map.of("HCOMM_HEARTBEAT_TIMEOUT", "2s", "HCOMM_STUCK_REPORT", "1s");
        CommConfig fromEnv = CommConfig.builderFrom(env, k -> null).build();
        assertThat(fromEnv.heartbeatTimeout()).isEqualTo(Duration.ofSeconds(2));
        assertThat(fromEnv.heartbeatInterval()).as("a quarter of the timeout").isEqualTo(Duration.ofMillis(500));
        assertThat(fromEnv.stuckReport()).isEqualTo(Duration.ofSeconds(1));
        Map<String, String> props = Map.of("hcomm.heartbeat.interval", "200ms", "hcomm.heartbeat.timeout", "3s", "hcomm.stuck.report", "0");
        CommConfig fromProps = CommConfig.builderFrom(env, props::get).build();
        assertThat(fromProps.heartbeatInterval()).isEqualTo(Duration.ofMillis(200));
        assertThat(fromProps.heartbeatTimeout()).isEqualTo(Duration.ofSeconds(3));
        assertThat(fromProps.stuckReport()).isZero();
        assertThat(fromProps.toString()).contains("heartbeatTimeout=3.0 s", "heartbeatInterval=200 ms", "stuckReport=0 ms");
        assertThat(CommConfig.builder().heartbeatTimeout(Duration.ZERO).build().heartbeatTimeout()).isZero();
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_HEARTBEAT_TIMEOUT", "100ms"), k -> null).build())
                .hasMessageContaining("HCOMM_HEARTBEAT_TIMEOUT").hasMessageContaining("at least 500ms");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_HEARTBEAT_TIMEOUT", "2s", "HCOMM_HEARTBEAT_INTERVAL", "1s"), k -> null).build())
                .hasMessageContaining("HCOMM_HEARTBEAT_INTERVAL").hasMessageContaining("at most a third");
        assertThatThrownBy(() -> CommConfig.builder().heartbeatInterval(Duration.ZERO).build()).hasMessageContaining("heartbeatInterval");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_STUCK_REPORT", "soon"), k -> null).build())
                .hasMessageContaining("HCOMM_STUCK_REPORT").hasMessageContaining("hcomm.stuck.report");
        assertThatThrownBy(() -> CommConfig.builder().stuckReport(Duration.ofSeconds(-1)).build()).hasMessageContaining("stuckReport");
    }

    @Test
    void warmUpSetting() {
        assertThat(CommConfig.builder().build().warmUp()).as("off by default: init stays short").isZero();
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_WARMUP", "20s"), k -> null).build().warmUp()).isEqualTo(Duration.ofSeconds(20));
        CommConfig fromProp = CommConfig.builderFrom(Map.of("HCOMM_WARMUP", "20s"), Map.of("hcomm.warmup", "500ms")::get).build();
        assertThat(fromProp.warmUp()).isEqualTo(Duration.ofMillis(500));
        assertThat(fromProp.toString()).contains("warmUp=500 ms");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_WARMUP", "11m"), k -> null).build())
                .hasMessageContaining("HCOMM_WARMUP").hasMessageContaining("[0, 10 min]").hasMessageContaining("was 11 min");
        assertThatThrownBy(() -> CommConfig.builder().warmUp(Duration.ofSeconds(-1)).build()).hasMessageContaining("warmUp");
        assertThatThrownBy(() -> CommConfig.builder().warmUp(null)).isInstanceOf(NullPointerException.class).hasMessageContaining("warmUp");
    }

    @Test
    void zeroCopySetting() {
        assertThat(CommConfig.builder().build().zeroCopy()).isTrue();
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_ZERO_COPY", "0"), k -> null).build().zeroCopy()).isFalse();
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_ZERO_COPY", "0"), Map.of("hcomm.zero.copy", "on")::get).build().zeroCopy()).isTrue();
        assertThat(CommConfig.builder().zeroCopy(false).build().toString()).contains("zeroCopy=false");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_ZERO_COPY", "maybe"), k -> null).build())
                .hasMessageContaining("HCOMM_ZERO_COPY").hasMessageContaining("not a boolean");
    }

    @Test
    void reconnectSettings() {
        CommConfig defaults = CommConfig.builder().build();
        assertThat(defaults.retryMax()).isEqualTo(5);
        assertThat(defaults.retryInterval()).isEqualTo(Duration.ofMillis(100));
        CommConfig fromEnv = CommConfig.builderFrom(Map.of("HCOMM_RETRY_MAX", "0", "HCOMM_RETRY_INTERVAL", "250ms"), k -> null).build();
        assertThat(fromEnv.retryMax()).isZero();
        assertThat(fromEnv.retryInterval()).isEqualTo(Duration.ofMillis(250));
        CommConfig fromProps = CommConfig.builderFrom(Map.of("HCOMM_RETRY_MAX", "0"), Map.of("hcomm.retry.max", "12", "hcomm.retry.interval", "1s")::get).build();
        assertThat(fromProps.retryMax()).isEqualTo(12);
        assertThat(fromProps.retryInterval()).isEqualTo(Duration.ofSeconds(1));
        assertThat(fromProps.toString()).contains("retryMax=12", "retryInterval=1.0 s");
        assertThat(CommConfig.builder().retryMax(3).retryInterval(Duration.ofMillis(20)).build().retryMax()).isEqualTo(3);
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_RETRY_MAX", "-1"), k -> null).build())
                .hasMessageContaining("HCOMM_RETRY_MAX");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_RETRY_MAX", "many"), k -> null).build())
                .hasMessageContaining("HCOMM_RETRY_MAX").hasMessageContaining("not an integer");
        assertThatThrownBy(() -> CommConfig.builder().retryMax(1001).build()).hasMessageContaining("retryMax");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_RETRY_INTERVAL", "0"), k -> null).build())
                .hasMessageContaining("HCOMM_RETRY_INTERVAL");
        assertThatThrownBy(() -> CommConfig.builder().retryInterval(Duration.ofMinutes(2)).build()).hasMessageContaining("retryInterval");
        assertThatThrownBy(() -> CommConfig.builder().retryInterval(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void storeReconnectSetting() {
        assertThat(CommConfig.builder().build().storeReconnect()).isEqualTo(Duration.ofSeconds(30));
        CommConfig fromEnv = CommConfig.builderFrom(Map.of("HCOMM_STORE_RECONNECT", "0"), k -> null).build();
        assertThat(fromEnv.storeReconnect()).isZero();
        CommConfig fromProps = CommConfig.builderFrom(Map.of("HCOMM_STORE_RECONNECT", "0"), Map.of("hcomm.store.reconnect", "2m")::get).build();
        assertThat(fromProps.storeReconnect()).isEqualTo(Duration.ofMinutes(2));
        assertThat(fromProps.toString()).contains("storeReconnect=2 min");
        assertThat(CommConfig.builder().storeReconnect(Duration.ofSeconds(5)).build().storeReconnect()).isEqualTo(Duration.ofSeconds(5));
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_STORE_RECONNECT", "soon"), k -> null).build())
                .hasMessageContaining("HCOMM_STORE_RECONNECT").hasMessageContaining("not a duration");
        assertThatThrownBy(() -> CommConfig.builder().storeReconnect(Duration.ofMinutes(11)).build())
                .hasMessageContaining("storeReconnect (HCOMM_STORE_RECONNECT) must be in [0, 10 min]");
        assertThatThrownBy(() -> CommConfig.builder().storeReconnect(Duration.ofSeconds(-1)).build()).hasMessageContaining("storeReconnect");
        assertThatThrownBy(() -> CommConfig.builder().storeReconnect(null)).isInstanceOf(NullPointerException.class);
    }
}
