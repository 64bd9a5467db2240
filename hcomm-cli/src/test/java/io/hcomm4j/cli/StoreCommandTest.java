package io.hcomm4j.cli;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.bootstrap.TcpStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code hcomm store} as a process of its own: it serves clients that prove the secret; SIGKILLed and started again on
 * the same port it is empty and a client with a reconnect budget writes its keys back; SIGTERM stops it with the
 * shutdown hook (the exit code of a JVM ended by SIGTERM, 143).
 */
@Timeout(60)
class StoreCommandTest {
    private static final String SECRET = "store-command-secret";

    private static Process start(int port) throws IOException {
        return start(port, Map.of("HCOMM_SECRET", SECRET), "--bind", "127.0.0.1");
    }

    /** {@code hcomm store args} on {@code port} with {@code hcommEnv} as its only HCOMM_* variables. */
    private static Process start(int port, Map<String, String> hcommEnv, String... args) throws IOException {
        List<String> cmd = new java.util.ArrayList<>(List.of("store"));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(LocalLauncher.javaCommand(HcommCli.class.getName(), cmd));
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("HCOMM_"));
        env.putAll(hcommEnv);
        env.put("MASTER_PORT", String.valueOf(port));
        return pb.redirectErrorStream(true).start();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** The line saying it serves; the rest of its output is drained in the background. */
    private static String awaitServing(Process p) throws IOException {
        return awaitServing(p, new StringBuilder());
    }

    /** As {@link #awaitServing(Process)}, the lines before that one added to {@code before}. */
    private static String awaitServing(Process p, StringBuilder before) throws IOException {
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), UTF_8));
        String line;
        while ((line = out.readLine()) != null) {
            if (!line.startsWith("hcomm store: serving")) before.append(line).append('\n');
            if (line.startsWith("hcomm store: serving")) {
                Thread.ofVirtual().start(() -> {
                    try {
                        while (out.readLine() != null) {
                            // drained
                        }
                    } catch (IOException ignored) {
                        // ended
                    }
                });
                return line;
            }
        }
        throw new AssertionError("hcomm store ended without serving:\n" + before);
    }

    /** Issue 18, secret policy: without HCOMM_SECRET the store serves this host only, unless HCOMM_AUTH=none says otherwise. */
    @Test
    void withoutASecretItListensOnLoopbackOnlyUnlessHcommAuthIsNone() throws Exception {
        int port = freePort();
        Process local = start(port, Map.of());
        try {
            StringBuilder said = new StringBuilder();
            assertThat(awaitServing(local, said)).contains("serving on 127.0.0.1:" + port);
            assertThat(said.toString()).contains("HCOMM_SECRET is not set: listening on 127.0.0.1 only", "hcomm secret");
            try (TcpStore client = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), (String) null, Duration.ofSeconds(10))) {
                client.set("k", new byte[] {1});
            }
        } finally {
            local.destroyForcibly();
        }

        // another address without a secret is refused before anything listens
        Captured io = new Captured();
        assertThat(HcommCli.execute(new String[] {"store", "--bind", "0.0.0.0", "--port", String.valueOf(port)}, io.out, io.err,
                Map.of())).isEqualTo(1);
        assertThat(io.err()).contains("hcomm store: no job secret is set", "every interface (0.0.0.0)", "HCOMM_SECRET",
                "HCOMM_AUTH=none");

        // HCOMM_AUTH=none: every interface by default, and said to be unauthenticated
        int open = freePort();
        Process unauthenticated = start(open, Map.of("HCOMM_AUTH", "none"));
        try {
            StringBuilder said = new StringBuilder();
            // the wildcard, as the JVM names it (IPv6's on a dual-stack host)
            assertThat(awaitServing(unauthenticated, said)).containsAnyOf("serving on 0.0.0.0:" + open, "serving on 0:0:0:0:0:0:0:0:" + open);
            assertThat(said.toString()).contains("HCOMM_AUTH=none and no HCOMM_SECRET: connections are not authenticated");
            try (TcpStore client = TcpStore.connect(new InetSocketAddress("127.0.0.1", open), (String) null, Duration.ofSeconds(10))) {
                client.set("k", new byte[] {1});
            }
        } finally {
            unauthenticated.destroyForcibly();
        }
    }

    @Test
    void servesRestartsEmptyAndGetsTheKeysBackThenStopsOnSigterm() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Process first = start(port);
        Process second = null;
        try (TcpStore client = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), SECRET, Duration.ofSeconds(20), Duration.ofSeconds(20))) {
            String line = awaitServing(first);
            assertThat(line).contains("127.0.0.1:" + port, "HCOMM_STORE_HOSTED=1", "MASTER_PORT=" + port);
            client.set("addr/0", "10.0.0.1 4000".getBytes(UTF_8));
            assertThat(client.add("joined", 1)).isEqualTo(1);

            first.destroyForcibly(); // SIGKILL
            assertThat(first.waitFor(10, TimeUnit.SECONDS)).isTrue();
            second = start(port);
            String again = awaitServing(second);
            assertThat(again).isNotEqualTo(line); // another incarnation
            try (TcpStore viewer = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), SECRET, Duration.ofSeconds(10))) {
                assertThat(viewer.get("addr/0", Duration.ofSeconds(10))).isEqualTo("10.0.0.1 4000".getBytes(UTF_8));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (viewer.tryGet("joined") == null && System.nanoTime() < deadline) Thread.sleep(20);
                assertThat(viewer.tryGet("joined")).isEqualTo("1".getBytes(UTF_8));
            }
            assertThat(client.restartsSeen()).isEqualTo(1);
            assertThat(client.add("joined", 1)).isEqualTo(2);

            second.destroy(); // SIGTERM: the shutdown hook closes the server
            assertThat(second.waitFor(20, TimeUnit.SECONDS)).isTrue();
            assertThat(second.exitValue()).isEqualTo(143);
        } finally {
            first.destroyForcibly();
            if (second != null) second.destroyForcibly();
        }
    }

    @Test
    void aPortInUseIsReportedAndExitsNonZero() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            Captured io = new Captured();
            int code = HcommCli.execute(new String[] {"store", "--bind", "127.0.0.1", "--port", String.valueOf(taken.getLocalPort())},
                    io.out, io.err, Map.of("HCOMM_SECRET", SECRET));
            assertThat(code).isEqualTo(1);
            assertThat(io.err()).contains("hcomm store: could not serve the store on 127.0.0.1:" + taken.getLocalPort());
        }
    }
}
