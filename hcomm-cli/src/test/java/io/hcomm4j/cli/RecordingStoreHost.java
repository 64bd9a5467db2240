package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.bootstrap.TcpStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The launcher's real store host ({@link LocalLauncher#TCP_STORE}, the core's TcpStoreServer), recording how
 * the launcher used it: with which bind address and secret it started it, where it listened, and how often it
 * was started and closed.
 */
final class RecordingStoreHost implements LocalLauncher.StoreHost {
    final AtomicInteger starts = new AtomicInteger();
    final AtomicInteger closes = new AtomicInteger();
    volatile InetSocketAddress bind;
    volatile String secret;
    volatile InetSocketAddress address;

    @Override
    public LocalLauncher.HostedStore start(InetSocketAddress bind, String secret) throws Exception {
        starts.incrementAndGet();
        this.bind = bind;
        this.secret = secret;
        LocalLauncher.HostedStore store = LocalLauncher.TCP_STORE.start(bind, secret);
        this.address = store.address();
        return new LocalLauncher.HostedStore(store.address(), () -> {
            closes.incrementAndGet();
            store.server().close();
        });
    }

    /** Connects to the store with {@code secret}, sets a key and reads it back: the store serves that job. */
    void checkServes(String secret) {
        byte[] value = "probe".getBytes(StandardCharsets.UTF_8);
        try (Store store = TcpStore.connect(address, secret, Duration.ofSeconds(10))) {
            store.set("recording-store-host/probe", value);
            assertThat(store.get("recording-store-host/probe", Duration.ofSeconds(10))).isEqualTo(value);
        }
    }

    /** True while something accepts connections where the store listened. */
    boolean listening() {
        try (Socket s = new Socket()) {
            s.connect(address, 2_000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
