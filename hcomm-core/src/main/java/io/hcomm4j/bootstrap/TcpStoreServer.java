package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;

import io.hcomm4j.HcommException;
import io.hcomm4j.security.Auth;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves a {@link Store} over TCP: the launcher or rank 0 runs one per job. Every connection must pass the
 * HMAC handshake ({@link io.hcomm4j.security.Auth}) before any request is read; a connection that fails it is
 * closed and logged, and the server goes on.
 *
 * <p>Each connection is served by its own virtual thread, so a client that stalls (during the handshake or in a
 * long {@code get}) holds only its own thread and never delays other clients. Threads are named
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
    /** Long enough for a loaded machine to answer, short enough that a silent stranger is dropped soon. */
    static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration CLOSE_JOIN = Duration.ofSeconds(5);
    /**
     * How long the server remembers a client whose connection ended: longer than a client tries to reconnect
     * (HCOMM_STORE_RECONNECT is at most 10 minutes), so a client that comes back still learns whether its last
     * mutation was applied.
     */
    static final Duration CLIENT_MEMORY = Duration.ofMinutes(15);
    /** How long a client's new connection waits for the thread of its previous one to end (see {@link #hello}). */
    private static final Duration SUPERSEDE_JOIN = Duration.ofSeconds(5);

    private final ServerSocketChannel server;
    private final InetSocketAddress address;
    /** {@code host:port}, for log lines. */
    private final String name;
    private final Auth auth;
    private final Duration handshakeTimeout;
    private final Thread acceptor;
    /** Connections whose thread may still run; pruned of ended ones by the acceptor. */
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    /** Acceptor-only: set size at which ended connections are pruned next. */
    private int pruneAt = 64;
    private final AtomicLong connectionCount = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private volatile boolean closed;
    /** Random, new at every start; a client that sees another one knows the store restarted and lost its data. */
    private final long incarnation = new java.security.SecureRandom().nextLong();
    /** What the server knows of each client id (HELLO); entries of clients gone for {@link #CLIENT_MEMORY} are pruned. */
    private final Map<Long, Client> clients = new ConcurrentHashMap<>();
    /** Acceptor-only: client count at which gone clients are pruned next. */
    private int clientPruneAt = 64;

    // One lock guards the data and the waiters. Each waiting request has its own condition and is registered
    // under the keys it still misses, so a set wakes only the requests waiting for that key: with n ranks each
    // awaiting all n keys, a broadcast would cost O(n^2) wake-ups and O(n^3) key checks.
    private final ReentrantLock lock = new ReentrantLock();
    private final Map<String, byte[]> data = new HashMap<>();
    private final Map<String, Set<Waiter>> waiters = new HashMap<>();

    /** A request blocked in GET or WAIT; {@code missing} are the keys it is registered under. Guarded by the lock. */
    private static final class Waiter {
        final Condition ready;
        final Set<String> missing;

        Waiter(Condition ready, Set<String> missing) {
            this.ready = ready;
            this.missing = missing;
        }
    }

    /** One accepted connection: its channel, the thread serving it, and the client it said it is (after HELLO). */
    private static final class Connection {
        final SocketChannel channel;
        Thread thread;
        /** Set by HELLO; read and written only by this connection's thread. */
        Client client;

        Connection(SocketChannel channel) {
            this.channel = channel;
        }
    }

    /**
     * A client, across its connections: how many of its mutations were applied and the reply to the last one. Only the
     * thread of the client's current connection changes it; a new connection takes over after the old one's thread
     * has ended ({@link #hello}), so a mutation and its count are never split.
     */
    private static final class Client {
        volatile Connection connection;
        /** Mutations applied for this client since this server started. */
        long applied;
        /** The reply to the last applied mutation, as sent. */
        Reply last;
        /** System.nanoTime() when its connection ended, 0 while connected. */
        volatile long endedAt;
    }

    /** A reply, kept so that it can be sent again to a client that missed it. */
    @FunctionalInterface
    private interface Reply {
        void write(DataOutputStream out) throws IOException;
    }

    private static final Reply OK_REPLY = out -> out.writeByte(OK);

    private TcpStoreServer(ServerSocketChannel server, String secret, Duration handshakeTimeout) throws IOException {
        this.server = server;
        this.address = (InetSocketAddress) server.getLocalAddress();
        this.name = hostPort(address);
        this.auth = Auth.of(secret);
        this.handshakeTimeout = handshakeTimeout;
        // A platform thread so the acceptor shows in ordinary thread dumps; daemon so a forgotten server cannot
        // keep the JVM alive.
        this.acceptor = Thread.ofPlatform().daemon().name("hcomm-store-acceptor-" + address.getPort())
                .unstarted(this::acceptLoop);
    }

    /** Starts serving on {@code bind} (port 0 picks a free port). {@code secret} may be null (unauthenticated). */
    public static TcpStoreServer start(InetSocketAddress bind, String secret) {
        return start(bind, secret, DEFAULT_HANDSHAKE_TIMEOUT);
    }

    /** As {@link #start(InetSocketAddress, String)} with a chosen handshake deadline (tests use a short one). */
    static TcpStoreServer start(InetSocketAddress bind, String secret, Duration handshakeTimeout) {
        ServerSocketChannel ch = null;
        try {
            ch = ServerSocketChannel.open();
            // Lets a restarted job rebind the port while old connections linger in TIME_WAIT.
            ch.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            ch.bind(bind, 1024);
            TcpStoreServer s = new TcpStoreServer(ch, secret, handshakeTimeout);
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

    /** Connections refused so far (failed handshake or broken protocol); an indicator of strangers or misconfiguration. */
    long rejectedConnections() {
        return rejected.get();
    }

    /** Threads of this server still alive (acceptor and connection threads); 0 after {@link #close()}. */
    int liveThreads() {
        int n = acceptor.isAlive() ? 1 : 0;
        for (Connection c : connections) if (c.thread.isAlive()) n++;
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
        StoreProtocol.closeQuietly(server);
        long deadline = System.nanoTime() + CLOSE_JOIN.toNanos();
        // The acceptor must be gone before the connections are swept, so no connection is registered after.
        join(acceptor, deadline);
        lock.lock();
        try {
            for (Set<Waiter> ws : waiters.values()) for (Waiter w : ws) w.ready.signal();
        } finally {
            lock.unlock();
        }
        List<Connection> all = new ArrayList<>(connections);
        for (Connection c : all) {
            StoreProtocol.closeQuietly(c.channel);
            c.thread.interrupt();
        }
        for (Connection c : all) join(c.thread, deadline);
        lock.lock();
        try {
            data.clear();
            waiters.clear();
        } finally {
            lock.unlock();
        }
        clients.clear();
        LOG.debug("store on {} closed", name);
    }

    @Override
    public String toString() {
        return "TcpStoreServer[" + name + "]";
    }

    private void acceptLoop() {
        long backoffMs = 1;
        while (!closed) {
            SocketChannel ch;
            try {
                ch = server.accept();
                backoffMs = 1;
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (closed) return;
                // Typically out of file descriptors: back off instead of spinning on the error.
                LOG.warn("store on {}: accept failed: {}", name, e.toString());
                try {
                    Thread.sleep(backoffMs);
                } catch (InterruptedException ie) {
                    return;
                }
                backoffMs = Math.min(backoffMs * 2, 100);
                continue;
            }
            Connection c = new Connection(ch);
            c.thread = Thread.ofVirtual()
                    .name("hcomm-store-conn-" + address.getPort() + "-" + connectionCount.incrementAndGet())
                    .unstarted(() -> serve(c));
            // Entries leave the set only once their thread has ended, so close() can join every thread that might
            // still run; pruning when the set has doubled keeps that amortized O(1) per connection.
            if (connections.size() >= pruneAt) {
                connections.removeIf(x -> !x.thread.isAlive());
                pruneAt = Math.max(64, 2 * connections.size());
            }
            if (clients.size() >= clientPruneAt) {
                long now = System.nanoTime();
                clients.values().removeIf(x -> x.endedAt != 0 && now - x.endedAt > CLIENT_MEMORY.toNanos());
                clientPruneAt = Math.max(64, 2 * clients.size());
            }
            connections.add(c);
            if (closed) {
                connections.remove(c);
                StoreProtocol.closeQuietly(ch);
                return;
            }
            c.thread.start();
        }
    }

    private void serve(Connection c) {
        SocketChannel ch = c.channel;
        String peer = remote(ch);
        try {
            try {
                auth.accept(ch, Auth.STORE, handshakeTimeout);
            } catch (IOException e) {
                if (!closed) {
                    rejected.incrementAndGet();
                    LOG.warn("store on {}: rejected connection from {}: {}", name, peer, e.getMessage());
                }
                return;
            }
            // Auth leaves its handshake read timeout on the socket; an authenticated rank may idle for as long
            // as it likes between requests.
            ch.socket().setSoTimeout(0);
            ch.socket().setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(ch.socket().getInputStream(), 8192));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(ch.socket().getOutputStream(), 8192));
            while (!closed) {
                int op = in.read();
                if (op < 0) break;
                handle(c, (byte) op, in, out);
                out.flush();
            }
        } catch (ProtocolException e) {
            if (!closed) {
                rejected.incrementAndGet();
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
            Client client = c.client;
            if (client != null && client.connection == c) client.endedAt = System.nanoTime();
        }
    }

    private void handle(Connection c, byte op, DataInputStream in, DataOutputStream out) throws IOException, InterruptedException {
        switch (op) {
            case OP_SET -> {
                String key = readKey(in);
                byte[] value = readValue(in);
                put(key, value);
                mutated(c, out, OK_REPLY);
            }
            case OP_GET -> {
                long waitMs = readWait(in);
                String key = readKey(in);
                byte[] v = awaitValue(key, waitMs);
                if (v == null) {
                    out.writeByte(MISSING);
                } else {
                    out.writeByte(OK);
                    writeBytes(out, v);
                }
            }
            case OP_TRY_GET -> {
                String key = readKey(in);
                byte[] v = current(key);
                if (v == null) {
                    out.writeByte(MISSING);
                } else {
                    out.writeByte(OK);
                    writeBytes(out, v);
                }
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
                List<String> missing = awaitKeys(keys, waitMs);
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
                Reply reply;
                try {
                    long result = add(key, delta);
                    reply = o -> {
                        o.writeByte(OK);
                        o.writeLong(result);
                    };
                } catch (IllegalArgumentException | ArithmeticException e) {
                    String message = e.getMessage();
                    reply = o -> error(o, message);
                }
                mutated(c, out, reply);
            }
            case OP_CAS -> {
                String key = readKey(in);
                int present = in.readUnsignedByte();
                if (present > 1) throw new ProtocolException("CAS presence flag " + present);
                byte[] expected = present == 1 ? readValue(in) : null;
                byte[] desired = readValue(in);
                byte[] after = compareAndSet(key, expected, desired);
                mutated(c, out, o -> {
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
                boolean existed;
                lock.lock();
                try {
                    existed = data.remove(key) != null;
                } finally {
                    lock.unlock();
                }
                mutated(c, out, o -> {
                    o.writeByte(OK);
                    o.writeByte(existed ? 1 : 0);
                });
            }
            case OP_HELLO -> hello(c, in.readLong(), in.readLong(), out);
            default -> throw new ProtocolException("unknown op " + (op & 0xff));
        }
    }

    /**
     * A mutation was applied for connection {@code c}: counts it for the connection's client and keeps the reply (which
     * shares the stored, never mutated arrays), then sends it. Counting happens before the reply is written, so a client
     * that never got the reply learns on its next connection that the mutation was applied.
     */
    private static void mutated(Connection c, DataOutputStream out, Reply reply) throws IOException {
        Client client = c.client;
        if (client != null) {
            client.applied++;
            client.last = reply;
        }
        reply.write(out);
    }

    /**
     * HELLO from client {@code id}, which counts {@code completed} mutations answered. A client has at most one
     * connection that counts: this one supersedes an earlier one, whose thread is ended first (its channel closed, the
     * thread interrupted and joined), so a mutation still being applied there is counted before the counts are compared.
     */
    private void hello(Connection c, long id, long completed, DataOutputStream out) throws IOException {
        Client client = clients.get(id);
        boolean known = client != null;
        if (!known) {
            client = new Client();
            Client raced = clients.putIfAbsent(id, client);
            if (raced != null) {
                client = raced;
                known = true;
            }
        }
        synchronized (client) {
            Connection previous = client.connection;
            if (previous != null && previous != c && previous.thread != Thread.currentThread()) {
                StoreProtocol.closeQuietly(previous.channel);
                previous.thread.interrupt();
                try {
                    if (!previous.thread.join(SUPERSEDE_JOIN)) {
                        error(out, "the previous connection of this client is still being served after " + SUPERSEDE_JOIN);
                        return;
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("interrupted while superseding a connection");
                }
            }
            client.connection = c;
            client.endedAt = 0;
            c.client = client;
            byte state;
            if (!known) {
                state = HELLO_NEW;
            } else if (client.applied == completed) {
                state = HELLO_IN_SYNC;
            } else if (client.applied == completed + 1 && client.last != null) {
                state = HELLO_APPLIED;
            } else {
                error(out, "this store applied " + client.applied + " mutations of the client, which counts " + completed);
                return;
            }
            out.writeByte(OK);
            out.writeLong(incarnation);
            out.writeByte(state);
            if (state == HELLO_APPLIED) client.last.write(out);
        }
    }

    private static long readWait(DataInputStream in) throws IOException {
        long ms = in.readLong();
        if (ms < 0) throw new ProtocolException("negative wait " + ms + " ms");
        return Math.min(ms, MAX_WAIT_MILLIS);
    }

    private static void error(DataOutputStream out, String message) throws IOException {
        byte[] m = (message == null ? "error" : message).getBytes(StandardCharsets.UTF_8);
        if (m.length > MAX_KEY_BYTES) m = Arrays.copyOf(m, MAX_KEY_BYTES);
        out.writeByte(ERROR);
        writeBytes(out, m);
    }

    // Stored arrays are never mutated after they are stored, so they may be written out after the lock is
    // released: socket I/O never happens under the lock.

    private void put(String key, byte[] value) {
        lock.lock();
        try {
            store(key, value);
        } finally {
            lock.unlock();
        }
    }

    /** Stores and wakes the requests waiting for {@code key}. Lock held. */
    private void store(String key, byte[] value) {
        data.put(key, value);
        Set<Waiter> ws = waiters.remove(key);
        if (ws == null) return;
        for (Waiter w : ws) {
            w.missing.remove(key);
            if (w.missing.isEmpty()) w.ready.signal();
        }
    }

    private byte[] current(String key) {
        lock.lock();
        try {
            return data.get(key);
        } finally {
            lock.unlock();
        }
    }

    private byte[] awaitValue(String key, long waitMs) throws InterruptedException, ClosedChannelException {
        lock.lock();
        try {
            // Read under the same lock hold that saw the key, so a concurrent delete cannot slip in between.
            return awaitLocked(List.of(key), waitMs).isEmpty() ? data.get(key) : null;
        } finally {
            lock.unlock();
        }
    }

    private List<String> awaitKeys(List<String> keys, long waitMs) throws InterruptedException, ClosedChannelException {
        lock.lock();
        try {
            return awaitLocked(keys, waitMs);
        } finally {
            lock.unlock();
        }
    }

    /** Waits until every key is set or {@code waitMs} passes; returns the keys still missing. Lock held. */
    private List<String> awaitLocked(List<String> keys, long waitMs) throws InterruptedException, ClosedChannelException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
        while (true) {
            // Closing: end without a reply, so the client reports a lost store rather than a timeout.
            if (closed) throw new ClosedChannelException();
            Set<String> missing = new LinkedHashSet<>();
            for (String k : keys) if (!data.containsKey(k)) missing.add(k);
            long left = deadline - System.nanoTime();
            if (missing.isEmpty() || left <= 0) return new ArrayList<>(missing);
            Waiter w = new Waiter(lock.newCondition(), missing);
            for (String k : missing) waiters.computeIfAbsent(k, x -> new HashSet<>()).add(w);
            try {
                while (!w.missing.isEmpty() && !closed && left > 0) left = w.ready.awaitNanos(left);
            } finally {
                for (String k : w.missing) {
                    Set<Waiter> ws = waiters.get(k);
                    if (ws != null && ws.remove(w) && ws.isEmpty()) waiters.remove(k);
                }
            }
            // Re-checked from the data: a key may have been deleted again after it woke us.
        }
    }

    private long add(String key, long delta) {
        lock.lock();
        try {
            long v = Math.addExact(decodeCounter(key, data.get(key)), delta);
            store(key, encodeCounter(v));
            return v;
        } finally {
            lock.unlock();
        }
    }

    private byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        lock.lock();
        try {
            byte[] cur = data.get(key);
            boolean match = expected == null ? cur == null : cur != null && Arrays.equals(cur, expected);
            if (!match) return cur;
            store(key, desired);
            return desired;
        } finally {
            lock.unlock();
        }
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
