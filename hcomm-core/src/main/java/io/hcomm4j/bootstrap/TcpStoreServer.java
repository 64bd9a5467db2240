package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;

import io.hcomm4j.HcommException;
import io.hcomm4j.security.AcceptGate;
import io.hcomm4j.security.Auth;
import io.hcomm4j.security.Wire;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves a {@link Store} over TCP: the launcher or rank 0 runs one per job. Every connection must pass the
 * HMAC handshake ({@link io.hcomm4j.security.Auth}) before any request is read; a connection that fails it is
 * closed and logged, and the server goes on.
 *
 * <p>Each connection is served by its own virtual thread, so a client that stalls (during the handshake or in a
 * long {@code get}) holds only its own thread and never delays other clients. Before a connection has proven the
 * secret it goes through the same {@link AcceptGate} as a rank's data listener: so many handshakes at once, so many
 * from one address, each with its deadline ({@code HCOMM_ACCEPT_PENDING}, {@code HCOMM_ACCEPT_PENDING_PER_SOURCE},
 * {@code HCOMM_HANDSHAKE_TIMEOUT}); accept errors back off and refusals are logged at most once per 10 s. Threads are named
 * {@code hcomm-store-acceptor-<port>} (a platform daemon thread) and {@code hcomm-store-conn-<port>-<n>}
 * (virtual).
 *
 * <p>The data lives in this process only: a server that is started again (on the same address, after a crash) starts
 * empty, with a new {@linkplain #incarnation() incarnation}. Its {@link TcpStore} clients notice the new incarnation
 * when they reconnect and write again what they had written (see {@link TcpStore}). For each client the server
 * remembers how many mutations it applied and the last reply, so that a client whose connection broke between a request
 * and its reply learns whether the request was applied instead of applying it twice (see {@link StoreProtocol}).
 */
public final class TcpStoreServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TcpStoreServer.class);
    private static final Duration CLOSE_JOIN = Duration.ofSeconds(5);

    private final ServerSocketChannel server;
    private final InetSocketAddress address;
    /** {@code host:port}, for log lines. */
    private final String name;
    private final Auth auth;
    /** What is let in before the secret is proven (acceptor and connection threads). */
    private final AcceptGate gate;
    private final Thread acceptor;
    /** Connections whose thread may still run; pruned of ended ones by the acceptor. */
    private final Set<StoreSessions.Connection> connections = ConcurrentHashMap.newKeySet();
    /** Acceptor-only: set size at which ended connections are pruned next. */
    private int pruneAt = 64;
    private final AtomicLong connectionCount = new AtomicLong();
    /** Authenticated connections closed for a protocol violation. */
    private final AtomicLong violations = new AtomicLong();
    private volatile boolean closed;
    /** Random, new at every start; a client that sees another one knows the store restarted and lost its data. */
    private final long incarnation = new java.security.SecureRandom().nextLong();
    /** What the server knows of each client, so that no mutation is applied twice. */
    private final StoreSessions sessions = new StoreSessions(incarnation);
    private final StoreData data = new StoreData();

    private TcpStoreServer(ServerSocketChannel server, Auth auth, AcceptGate.Limits limits) throws IOException {
        this.server = server;
        this.address = (InetSocketAddress) server.getLocalAddress();
        this.name = hostPort(address);
        this.auth = auth;
        this.gate = new AcceptGate(limits, LOG, "store on " + name, "store connection");
        // A platform thread so the acceptor shows in ordinary thread dumps; daemon so a forgotten server cannot
        // keep the JVM alive.
        this.acceptor = Thread.ofPlatform().daemon().name("hcomm-store-acceptor-" + address.getPort())
                .unstarted(this::acceptLoop);
    }

    /**
     * Starts serving on {@code bind} (port 0 picks a free port) with the default {@link AcceptGate.Limits}.
     *
     * @param secret the job secret (at least 16 bytes), or null for none: then {@code bind} must be a loopback address
     * @throws HcommException the address cannot be bound, or is not a loopback one and there is no secret
     */
    public static TcpStoreServer start(InetSocketAddress bind, String secret) {
        return start(bind, secret, AcceptGate.Limits.DEFAULT);
    }

    /**
     * Starts serving on {@code bind} with the handshake {@code auth}: a job's ({@link Bootstrap#auth}, under its TLS if
     * it has one), or {@link Auth#unauthenticated()} for a store that serves anyone on any address.
     *
     * @throws HcommException the address cannot be bound, or is not allowed without a secret ({@link Auth#checkListen})
     */
    public static TcpStoreServer start(InetSocketAddress bind, Auth auth) {
        return start(bind, auth, AcceptGate.Limits.DEFAULT);
    }

    /** As {@link #start(InetSocketAddress, String)} with a chosen handshake deadline (tests use a short one). */
    static TcpStoreServer start(InetSocketAddress bind, String secret, Duration handshakeTimeout) {
        AcceptGate.Limits d = AcceptGate.Limits.DEFAULT;
        return start(bind, secret, new AcceptGate.Limits(d.pending(), d.perSource(), handshakeTimeout));
    }

    /** As {@link #start(InetSocketAddress, String)} with the given limits on connections before the secret is proven. */
    public static TcpStoreServer start(InetSocketAddress bind, String secret, AcceptGate.Limits limits) {
        return start(bind, secret == null ? Auth.loopbackOnly() : Auth.of(secret), limits);
    }

    /** As {@link #start(InetSocketAddress, Auth)} with the given limits on connections before the secret is proven. */
    public static TcpStoreServer start(InetSocketAddress bind, Auth auth, AcceptGate.Limits limits) {
        java.util.Objects.requireNonNull(auth, "auth");
        auth.checkListen(bind.getAddress(), "the store");
        ServerSocketChannel ch = null;
        try {
            ch = ServerSocketChannel.open();
            // Lets a restarted job rebind the port while old connections linger in TIME_WAIT.
            ch.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            ch.bind(bind, 1024);
            TcpStoreServer s = new TcpStoreServer(ch, auth, limits);
            s.acceptor.start();
            LOG.debug("store serving on {}", s.name);
            return s;
        } catch (IOException | RuntimeException e) {
            StoreProtocol.closeQuietly(ch);
            throw new HcommException("could not serve the store on " + hostPort(bind) + ": " + e, e);
        }
    }

    /** The address and port it listens on. */
    public InetSocketAddress address() {
        return address;
    }

    /** This server's incarnation: random, new at every start (a restarted store has another one). */
    public long incarnation() {
        return incarnation;
    }

    /** Connections refused so far (handshake failed or not allowed, or a protocol violation): strangers or misconfiguration. */
    long rejectedConnections() {
        return gate.refusals() + violations.get();
    }

    /** The gate connections pass before they proved the secret (pending handshakes, refusals): for tests. */
    AcceptGate gate() {
        return gate;
    }

    /** Threads of this server still alive (acceptor and connection threads); 0 after {@link #close()}. */
    int liveThreads() {
        int n = acceptor.isAlive() ? 1 : 0;
        for (StoreSessions.Connection c : connections) if (c.thread.isAlive()) n++;
        return n;
    }

    /** Stops serving and closes every connection. Idempotent. */
    @Override
    public void close() {
        if (closed) return;
        synchronized (this) {
            if (closed) return;
            closed = true;
        }
        data.close();
        StoreProtocol.closeQuietly(server);
        long deadline = System.nanoTime() + CLOSE_JOIN.toNanos();
        // The acceptor must be gone before the connections are swept, so no connection is registered after.
        join(acceptor, deadline);
        List<StoreSessions.Connection> all = new ArrayList<>(connections);
        for (StoreSessions.Connection c : all) {
            StoreProtocol.closeQuietly(c.channel);
            c.thread.interrupt();
        }
        for (StoreSessions.Connection c : all) join(c.thread, deadline);
        data.clear();
        sessions.clear();
        LOG.debug("store on {} closed", name);
    }

    @Override
    public String toString() {
        return "TcpStoreServer[" + name + "]";
    }

    private void acceptLoop() {
        try {
            AcceptGate.Admitted a;
            while ((a = gate.next(server, () -> closed)) != null) {
                SocketChannel ch = a.channel();
                AcceptGate.Pass pass = a.pass();
                StoreSessions.Connection c = new StoreSessions.Connection(ch);
                c.thread = Thread.ofVirtual()
                        .name("hcomm-store-conn-" + address.getPort() + "-" + connectionCount.incrementAndGet())
                        .unstarted(() -> serve(c, pass));
                // Entries leave the set only once their thread has ended, so close() can join every thread that might
                // still run; pruning when the set has doubled keeps that amortized O(1) per connection.
                if (connections.size() >= pruneAt) {
                    connections.removeIf(x -> !x.thread.isAlive());
                    pruneAt = Math.max(64, 2 * connections.size());
                }
                sessions.prune();
                connections.add(c);
                if (closed) {
                    connections.remove(c);
                    pass.close();
                    StoreProtocol.closeQuietly(ch);
                    return;
                }
                c.thread.start();
            }
        } catch (InterruptedException e) {
            // close() does not interrupt the acceptor; nothing else does
        }
    }

    private void serve(StoreSessions.Connection c, AcceptGate.Pass pass) {
        SocketChannel ch = c.channel;
        String peer = remote(ch);
        try {
            Wire w;
            try {
                w = auth.accept(ch, Auth.STORE, gate.limits().deadline());
            } catch (IOException e) {
                if (!closed) gate.refused(peer, e.getMessage());
                return;
            } finally {
                pass.close(); // proven or not, it no longer counts against the handshakes
            }
            // Auth leaves its handshake read timeout on the socket; an authenticated rank may idle for as long
            // as it likes between requests.
            w.readTimeout(0);
            ch.socket().setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(w.in(), 8192));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(w.out(), 8192));
            while (!closed) {
                int op = in.read();
                if (op < 0) break;
                handle(c, (byte) op, in, out);
                out.flush();
            }
        } catch (ProtocolException e) {
            if (!closed) {
                violations.incrementAndGet();
                LOG.warn("store on {}: closing connection from {}: protocol violation: {}", name, peer, e.getMessage());
            }
        } catch (EOFException e) {
            if (!closed) LOG.warn("store on {}: connection from {} ended in the middle of a request", name, peer);
        } catch (InterruptedException e) {
            // close() interrupts waiting handlers: nothing to report.
        } catch (IOException e) {
            if (!closed) LOG.debug("store on {}: connection from {} lost: {}", name, peer, e.toString());
        } finally {
            StoreProtocol.closeQuietly(ch);
            StoreSessions.ended(c);
        }
    }

    private void handle(StoreSessions.Connection c, byte op, DataInputStream in, DataOutputStream out) throws IOException, InterruptedException {
        switch (op) {
            case OP_SET -> {
                String key = readKey(in);
                byte[] value = readValue(in);
                data.put(key, value);
                StoreSessions.mutatedOk(c, out);
            }
            case OP_GET -> {
                long waitMs = readWait(in);
                String key = readKey(in);
                byte[] v = data.awaitValue(key, waitMs);
                writeValueOrMissing(out, v);
            }
            case OP_TRY_GET -> {
                String key = readKey(in);
                byte[] v = data.current(key);
                writeValueOrMissing(out, v);
            }
            case OP_WAIT -> {
                long waitMs = readWait(in);
                int n = readKeyCount(in);
                List<String> keys = new ArrayList<>(Math.min(n, 1024));
                long total = 0;
                for (int i = 0; i < n; i++) {
                    byte[] k = readKeyBytes(in);
                    total += k.length;
                    if (total > MAX_WAIT_KEY_BYTES) throw new ProtocolException("WAIT keys exceed " + MAX_WAIT_KEY_BYTES + " bytes");
                    keys.add(new String(k, StandardCharsets.UTF_8));
                }
                List<String> missing = data.awaitKeys(keys, waitMs);
                if (missing.isEmpty()) {
                    out.writeByte(OK);
                } else {
                    out.writeByte(MISSING);
                    out.writeInt(missing.size());
                    for (String k : missing) writeBytes(out, k.getBytes(StandardCharsets.UTF_8));
                }
            }
            case OP_ADD -> {
                String key = readKey(in);
                long delta = in.readLong();
                StoreSessions.Reply reply;
                try {
                    long result = data.add(key, delta);
                    reply = o -> {
                        o.writeByte(OK);
                        o.writeLong(result);
                    };
                } catch (IllegalArgumentException | ArithmeticException e) {
                    String message = e.getMessage();
                    reply = o -> writeError(o, message);
                }
                StoreSessions.mutated(c, out, reply);
            }
            case OP_CAS -> {
                String key = readKey(in);
                int present = in.readUnsignedByte();
                if (present > 1) throw new ProtocolException("CAS presence flag " + present);
                byte[] expected = present == 1 ? readValue(in) : null;
                byte[] desired = readValue(in);
                byte[] after = data.compareAndSet(key, expected, desired);
                StoreSessions.mutated(c, out, o -> {
                    o.writeByte(OK);
                    if (after == null) {
                        o.writeByte(0);
                    } else {
                        o.writeByte(1);
                        writeBytes(o, after);
                    }
                });
            }
            case OP_DELETE -> {
                String key = readKey(in);
                boolean existed = data.delete(key);
                StoreSessions.mutated(c, out, o -> {
                    o.writeByte(OK);
                    o.writeByte(existed ? 1 : 0);
                });
            }
            case OP_HELLO -> sessions.hello(c, in.readLong(), in.readLong(), out);
            default -> throw new ProtocolException("unknown op " + (op & 0xff));
        }
    }

    private static void writeValueOrMissing(DataOutputStream out, byte[] v) throws IOException {
        if (v == null) {
            out.writeByte(MISSING);
        } else {
            out.writeByte(OK);
            writeBytes(out, v);
        }
    }

    private static long readWait(DataInputStream in) throws IOException {
        long ms = in.readLong();
        if (ms < 0) throw new ProtocolException("negative wait " + ms + " ms");
        return Math.min(ms, MAX_WAIT_MILLIS);
    }

    private static String remote(SocketChannel ch) {
        try {
            SocketAddress a = ch.getRemoteAddress();
            return String.valueOf(a);
        } catch (IOException e) {
            return "?";
        }
    }

    private static void join(Thread t, long deadline) {
        try {
            Duration left = Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
            if (!t.join(left)) LOG.warn("store thread {} did not end within {} of close()", t.getName(), CLOSE_JOIN);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
