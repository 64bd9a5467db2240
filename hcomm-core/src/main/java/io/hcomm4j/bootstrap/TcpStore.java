package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import io.hcomm4j.security.Auth;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Client of a {@link TcpStoreServer}.
 *
 * <p>One connection; requests from several threads are serialized, so a thread blocked in {@link #get} or
 * {@link #await} delays the others until its reply comes (the time a waiting call spends queued counts against
 * its own deadline). Interrupting a thread blocked in a call closes the connection (NIO channels are interruptible).
 *
 * <p><b>Lost connections.</b> Made with a reconnect budget ({@link #connect(InetSocketAddress, String, Duration,
 * Duration)}, {@code HCOMM_STORE_RECONNECT} at init), a client whose connection ends or breaks connects again, with
 * backoff, for up to that long from the moment the loss was noticed, and then goes on with the call that was
 * interrupted. A call that would wait beyond its own deadline throws {@link CommTimeoutException} (the next call goes
 * on reconnecting); once the budget is spent, this and every later call throws {@link HcommException} naming the store
 * address. An idle client notices a lost connection too: a virtual thread ({@code hcomm-store-watch-<port>}) looks every
 * {@value #WATCH_INTERVAL_MS} ms whether the connection ended (a non-blocking read, no traffic) and reconnects.
 *
 * <ul>
 *   <li><i>The store kept its data</i> (the connection broke, the server did not restart): a mutation whose reply was
 *       lost is not sent twice. The server counts each client's mutations and keeps the last reply; on the new
 *       connection it says whether the interrupted one was applied (then its reply is taken from there) or not (then
 *       it is sent again). So {@link #add} counts once, and a {@link #compareAndSet} decides once.</li>
 *   <li><i>The store restarted</i> (a new incarnation: it lost everything): the client writes again, before anything
 *       else, what it wrote to the old one and what it has not deleted since: the last value of each key it
 *       {@linkplain #set set} (or won with {@link #compareAndSet}, written again as a compare-and-set on the absent
 *       key), then its own contribution to each counter (the sum of its {@link #add} deltas since its last set of the
 *       key). The interrupted call is then sent to the new server. A counter is whole again once every client that
 *       added to it has reconnected (the watchers do that within a few hundred milliseconds of the store's return);
 *       until then an {@code add} on a counter shared by several clients returns a value that misses the others'
 *       contributions. A counter that only this client adds to (HComm4J's per-rank generation counters) is right at
 *       once. A key that several clients set holds one of their last values afterwards.</li>
 * </ul>
 *
 * <p>Without a budget ({@link #connect(InetSocketAddress, String, Duration)}), a lost connection is final: every
 * later call throws {@link HcommException}.
 */
public final class TcpStore implements Store {
    private static final Logger LOG = LoggerFactory.getLogger(TcpStore.class);
    /** Longest silence tolerated in a reply beyond the time the server was asked to wait: then it is presumed dead. */
    static final Duration REPLY_GRACE = Duration.ofSeconds(60);
    private static final Duration HANDSHAKE_MAX = Duration.ofSeconds(10);
    private static final Duration HANDSHAKE_MIN = Duration.ofSeconds(1);
    /** Longest single attempt (connect and handshake) of a reconnect, so the watcher never holds the lock long. */
    private static final Duration ATTEMPT_MAX = Duration.ofSeconds(5);
    /** A server that drops us this often during the handshake is refusing our secret, not starting up. */
    private static final int MAX_HANDSHAKE_DROPS = 3;
    private static final long BACKOFF_START_MS = 10;
    private static final long BACKOFF_MAX_MS = 500;
    /** How often the watcher looks at an idle connection: the delay between a store's return and an idle client's. */
    static final long WATCH_INTERVAL_MS = 200;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final InetSocketAddress address;
    private final Auth auth;
    private final InetAddress localAddress;
    /** How long a lost connection is tried again; zero: never. */
    private final Duration reconnect;
    /** Identifies this client to the server across its connections (HELLO). */
    private final long clientId = RANDOM.nextLong();
    private final ReentrantLock lock = new ReentrantLock();
    private volatile boolean closed;
    /** Counted down by {@link #close()}: wakes backoff sleeps and the watcher at once. */
    private final CountDownLatch closing = new CountDownLatch(1);
    /** A channel being connected by a reconnect, so that {@link #close()} can abort it. */
    private volatile SocketChannel connecting;
    private final Thread watcher;

    // Guarded by lock.
    /** The connection, or null while it is lost; volatile for {@link #close()}, which does not take the lock. */
    private volatile Conn conn;
    /** The incarnation of the server last connected to. */
    private long incarnation;
    /** Mutations sent to that server and answered. */
    private long completed;
    /** When the loss was noticed (System.nanoTime), and why; valid while conn is null and broken is null. */
    private long lostAt;
    private String lostWhy;
    /**
     * A mutation written on a connection that broke before its reply came (or whose caller was interrupted): the next
     * HELLO says whether the server applied it.
     */
    private Req<?> unanswered;
    /** Why the client is unusable for good (the reconnect budget ran out, a protocol error), or null. */
    private String broken;
    /** Keys this client set (or won with a CAS), with the value; only with a reconnect budget. */
    private final Map<String, Written> written = new LinkedHashMap<>();
    /** This client's contribution to each counter since its last set of the key; only with a reconnect budget. */
    private final Map<String, Long> added = new LinkedHashMap<>();
    /** What is still to be written again to a restarted server, before any other request. */
    private final ArrayDeque<Req<?>> restore = new ArrayDeque<>();
    /** Restarts of the server seen so far (new incarnations); volatile for {@link #restartsSeen()}. */
    private volatile int restarts;

    private record Conn(SocketChannel channel, DataInputStream in, DataOutputStream out) {
    }

    private record Written(byte[] value, boolean byCas) {
    }

    private TcpStore(InetSocketAddress address, Auth auth, Conn conn, long incarnation, Duration reconnect) throws IOException {
        this.address = address;
        this.auth = auth;
        this.conn = conn;
        this.incarnation = incarnation;
        this.reconnect = reconnect;
        this.localAddress = ((InetSocketAddress) conn.channel.getLocalAddress()).getAddress();
        this.watcher = reconnect.isZero() ? null
                : Thread.ofVirtual().name("hcomm-store-watch-" + address.getPort()).unstarted(this::watch);
    }

    /**
     * Connects to the server at {@code address}, retrying with backoff until it answers or {@code timeout}
     * passes (ranks may start before the server), and proves {@code secret}. A connection lost later is not
     * re-established: every later call throws {@link HcommException}.
     *
     * @throws CommTimeoutException no server answered at {@code address} within {@code timeout}
     * @throws HcommException       the server refused the secret (or is not an HComm4J store)
     */
    public static TcpStore connect(InetSocketAddress address, String secret, Duration timeout) {
        return connect(address, secret, timeout, Duration.ZERO);
    }

    /**
     * As {@link #connect(InetSocketAddress, String, Duration)}; a connection lost later is re-established for up to
     * {@code reconnect} (zero: never), and a restarted server gets back what this client wrote (see the class comment).
     *
     * @throws CommTimeoutException no server answered at {@code address} within {@code timeout}
     * @throws HcommException       the server refused the secret (or is not an HComm4J store)
     */
    public static TcpStore connect(InetSocketAddress address, String secret, Duration timeout, Duration reconnect) {
        if (reconnect == null || reconnect.isNegative()) throw new IllegalArgumentException("reconnect must be >= 0, was " + reconnect);
        long deadline = System.nanoTime() + waitMillis(timeout) * 1_000_000L;
        Auth auth = Auth.of(secret);
        long backoff = BACKOFF_START_MS;
        int handshakeDrops = 0;
        Exception last = null;
        int attempts = 0;
        boolean connected = false;
        while (true) {
            attempts++;
            Attempt a = new Attempt();
            try {
                Conn c = open(address, auth, deadline, a, null);
                TcpStore store;
                try {
                    store = new TcpStore(a.target, auth, c, 0, reconnect);
                    store.incarnation = store.hello(c, 0).incarnation;
                } catch (IOException | RuntimeException e) {
                    StoreProtocol.closeQuietly(c.channel);
                    throw e;
                }
                if (store.watcher != null) store.watcher.start();
                LOG.debug("connected to store at {} after {} attempt(s) (client {})", a.target, attempts, Long.toHexString(store.clientId));
                return store;
            } catch (Auth.AuthException e) {
                if (!e.getMessage().contains("closed the connection")) {
                    String hint = e.getMessage().contains("secret")
                            ? "is HCOMM_SECRET the same on every rank and the launcher?"
                            : "is another service listening on that port?";
                    throw new HcommException("store at " + hostPort(address) + " failed the handshake: " + e.getMessage()
                            + " (" + hint + ")", e);
                }
                last = e;
                if (++handshakeDrops >= MAX_HANDSHAKE_DROPS) throw secretRejected(address, handshakeDrops, e);
            } catch (IOException | RuntimeException e) {
                if (e instanceof ServerError se) throw new HcommException("store at " + hostPort(address) + " refused this client: " + se.getMessage(), se);
                last = e;
                connected = a.connected;
                // The acceptor checks our proof first and just hangs up on a wrong secret, so a wrong secret looks
                // like a dropped connection; a few of those in a row means it is not a start-up race.
                boolean dropped = a.connected && (e instanceof EOFException || e instanceof SocketException);
                if (dropped && ++handshakeDrops >= MAX_HANDSHAKE_DROPS) throw secretRejected(address, handshakeDrops, e);
            }
            long leftMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (leftMs <= 0) {
                // Something accepted the connection but never started the handshake: not our store.
                String hint = connected && !(last instanceof EOFException || last instanceof SocketException)
                        ? "; a server accepted the connection but did not speak the HComm4J handshake: is another "
                        + "service on that port (under torchrun MASTER_PORT is torch's own store: set HCOMM_STORE_PORT)?"
                        : "";
                throw new CommTimeoutException("could not connect to the store at " + hostPort(address) + " within "
                        + human(timeout) + " (" + attempts + " attempts); last error: " + last + hint);
            }
            try {
                Thread.sleep(Math.min(backoff, leftMs));
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new HcommException("interrupted while connecting to the store at " + hostPort(address));
            }
            backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
        }
    }

    private static HcommException secretRejected(InetSocketAddress address, int drops, Exception last) {
        return new HcommException("store at " + hostPort(address) + " closed the connection during the handshake "
                + drops + " times: it most likely rejected the job secret (is HCOMM_SECRET "
                + "the same on every rank and the launcher?); last error: " + last, last);
    }

    /** What one connection attempt got to: the resolved target, and whether TCP connected. */
    private static final class Attempt {
        InetSocketAddress target;
        boolean connected;
    }

    /**
     * One attempt: resolves {@code address} (again each time: the store's host name may not resolve until its node is
     * up), connects and proves the secret, all before {@code deadline}. {@code current}, if not null, publishes the
     * channel while it connects, so that {@link #close()} can abort it.
     */
    private static Conn open(InetSocketAddress address, Auth auth, long deadline, Attempt a, TcpStore current) throws IOException {
        InetSocketAddress target = address.isUnresolved()
                ? new InetSocketAddress(address.getHostString(), address.getPort()) : address;
        a.target = target;
        if (target.isUnresolved()) throw new IOException("cannot resolve " + address.getHostString());
        SocketChannel ch = SocketChannel.open();
        try {
            if (current != null) {
                current.connecting = ch;
                if (current.closed) throw new IOException("store client closed");
            }
            long leftMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
            ch.socket().connect(target, (int) Math.min(leftMs, Integer.MAX_VALUE));
            a.connected = true;
            ch.socket().setTcpNoDelay(true);
            ch.socket().setKeepAlive(true);
            Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
            Duration hs = left.compareTo(HANDSHAKE_MAX) > 0 ? HANDSHAKE_MAX
                    : left.compareTo(HANDSHAKE_MIN) < 0 ? HANDSHAKE_MIN : left;
            auth.connect(ch, Auth.STORE, hs);
            return new Conn(ch, new DataInputStream(new BufferedInputStream(ch.socket().getInputStream(), 8192)),
                    new DataOutputStream(new BufferedOutputStream(ch.socket().getOutputStream(), 8192)));
        } catch (IOException | RuntimeException e) {
            StoreProtocol.closeQuietly(ch);
            throw e;
        } finally {
            if (current != null) current.connecting = null;
        }
    }

    /** The server's answer to HELLO. */
    private record Hello(long incarnation, byte state) {
    }

    /** Says HELLO on {@code c} with {@code done} mutations answered; leaves a missed reply (HELLO_APPLIED) unread. */
    private Hello hello(Conn c, long done) throws IOException {
        // the server may first wait (up to 5 s) for the thread of this client's previous connection to end
        c.channel.socket().setSoTimeout((int) HANDSHAKE_MAX.plusSeconds(5).toMillis());
        c.out.writeByte(OP_HELLO);
        c.out.writeLong(clientId);
        c.out.writeLong(done);
        c.out.flush();
        readStatus(c.in, "hello");
        long inc = c.in.readLong();
        byte state = c.in.readByte();
        if (state != HELLO_NEW && state != HELLO_IN_SYNC && state != HELLO_APPLIED) {
            throw new ProtocolException("store answered hello with state " + state);
        }
        return new Hello(inc, state);
    }

    /** Local address of the store connection: the interface that reaches the store's host. */
    public InetAddress localAddress() {
        return localAddress;
    }

    /** The address of the store server this client is connected to. */
    public InetSocketAddress address() {
        return address;
    }

    /** Whether the watcher thread still runs (tests: it must end with {@link #close()} and when the client gives up). */
    boolean watcherAlive() {
        return watcher != null && watcher.isAlive();
    }

    /** How many times this client found the server restarted (a new incarnation) and wrote its keys again. */
    public int restartsSeen() {
        return restarts;
    }

    @Override
    public void set(String key, byte[] value) {
        byte[] k = encodeKey(key);
        checkValue(key, value);
        byte[] copy = journaling() ? value.clone() : value; // the caller may reuse its array; a restart needs these bytes
        call(new Req<Void>("set '" + key + "'", true, out -> {
            out.writeByte(OP_SET);
            writeBytes(out, k);
            writeBytes(out, copy);
        }, in -> {
            expectOk(in, "set '" + key + "'");
            return null;
        }, r -> {
            written.put(key, new Written(copy, false));
            added.remove(key);
        }), null, null);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        byte[] k = encodeKey(key);
        long deadline = System.nanoTime() + waitMillis(timeout) * 1_000_000L;
        byte[] v = call(new Req<byte[]>("get '" + key + "'", false, out -> {
            out.writeByte(OP_GET);
            out.writeLong(remainingMillis(deadline));
            writeBytes(out, k);
        }, in -> readStatus(in, "get '" + key + "'") == OK ? readValue(in) : null, null),
                deadline, () -> "get of key '" + key + "' timed out after " + human(timeout));
        if (v == null) {
            throw new CommTimeoutException("store get of key '" + key + "' timed out after " + human(timeout)
                    + ": no rank set it (store " + hostPort(address) + ")");
        }
        return v;
    }

    @Override
    public byte[] tryGet(String key) {
        byte[] k = encodeKey(key);
        return call(new Req<byte[]>("tryGet '" + key + "'", false, out -> {
            out.writeByte(OP_TRY_GET);
            writeBytes(out, k);
        }, in -> readStatus(in, "tryGet '" + key + "'") == OK ? readValue(in) : null, null), null, null);
    }

    @Override
    public void await(Collection<String> keys, Duration timeout) {
        List<String> list = List.copyOf(keys);
        if (list.size() > MAX_WAIT_KEYS) {
            throw new IllegalArgumentException("await of " + list.size() + " keys, the limit is " + MAX_WAIT_KEYS);
        }
        List<byte[]> encoded = new ArrayList<>(list.size());
        for (String k : list) encoded.add(encodeKey(k));
        long deadline = System.nanoTime() + waitMillis(timeout) * 1_000_000L;
        if (list.isEmpty()) return;
        List<String> missing = call(new Req<List<String>>("await " + describe(list), false, out -> {
            out.writeByte(OP_WAIT);
            out.writeLong(remainingMillis(deadline));
            out.writeInt(encoded.size());
            for (byte[] k : encoded) writeBytes(out, k);
        }, in -> {
            if (readStatus(in, "await") == OK) return List.<String>of();
            int n = readKeyCount(in);
            List<String> m = new ArrayList<>(Math.min(n, 1024));
            for (int i = 0; i < n; i++) m.add(readKey(in));
            return m;
        }, null), deadline, () -> "await of keys " + describe(list) + " timed out after " + human(timeout));
        if (!missing.isEmpty()) {
            throw new CommTimeoutException("store await timed out after " + human(timeout) + " waiting for keys "
                    + describe(list) + "; still missing: " + describe(missing) + " (store " + hostPort(address) + ")");
        }
    }

    @Override
    public long add(String key, long delta) {
        return call(addRequest(key, delta, true), null, null);
    }

    /** An ADD request; {@code journal}: record the delta as this client's contribution (not for a restore). */
    private Req<Long> addRequest(String key, long delta, boolean journal) {
        byte[] k = encodeKey(key);
        return new Req<>("add '" + key + "'", true, out -> {
            out.writeByte(OP_ADD);
            writeBytes(out, k);
            out.writeLong(delta);
        }, in -> {
            expectOk(in, "add '" + key + "'");
            return in.readLong();
        }, journal ? r -> added.merge(key, delta, Long::sum) : null);
    }

    @Override
    public byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        if (expected != null) checkValue(key, expected);
        checkValue(key, desired);
        byte[] copy = journaling() ? desired.clone() : desired;
        return call(casRequest(key, expected, copy, true), null, null);
    }

    /** A CAS request; {@code journal}: record a win as a key this client wrote (not for a restore). */
    private Req<byte[]> casRequest(String key, byte[] expected, byte[] desired, boolean journal) {
        byte[] k = encodeKey(key);
        return new Req<>("compareAndSet '" + key + "'", true, out -> {
            out.writeByte(OP_CAS);
            writeBytes(out, k);
            if (expected == null) {
                out.writeByte(0);
            } else {
                out.writeByte(1);
                writeBytes(out, expected);
            }
            writeBytes(out, desired);
        }, in -> {
            expectOk(in, "compareAndSet '" + key + "'");
            return in.readUnsignedByte() == 1 ? readValue(in) : null;
        }, journal ? after -> {
            if (Arrays.equals(after, desired)) {
                written.put(key, new Written(desired, true));
                added.remove(key);
            }
        } : null);
    }

    @Override
    public boolean delete(String key) {
        byte[] k = encodeKey(key);
        return call(new Req<Boolean>("delete '" + key + "'", true, out -> {
            out.writeByte(OP_DELETE);
            writeBytes(out, k);
        }, in -> {
            expectOk(in, "delete '" + key + "'");
            return in.readUnsignedByte() == 1;
        }, r -> {
            written.remove(key);
            added.remove(key);
        }), null, null);
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        closing.countDown();
        // Not under the lock: closing the channel is what unblocks a thread stuck in a call.
        Conn c = conn; // a racy read is fine: a connection installed after this is closed by its installer (closed is set)
        if (c != null) StoreProtocol.closeQuietly(c.channel);
        StoreProtocol.closeQuietly(connecting);
        if (watcher != null && Thread.currentThread() != watcher) {
            try {
                // Bounded: the watcher ends at its next look, or when its connect attempt (aborted above) returns.
                if (!watcher.join(Duration.ofSeconds(2))) LOG.warn("{}: its watcher thread did not end within 2 s of close()", this);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public String toString() {
        return "TcpStore[" + hostPort(address) + "]";
    }

    // ------------------------------------------------------------------------------------------- requests

    @FunctionalInterface
    private interface Writer {
        void write(DataOutputStream out) throws IOException;
    }

    @FunctionalInterface
    private interface Reader<T> {
        T read(DataInputStream in) throws IOException;
    }

    @FunctionalInterface
    private interface Journal<T> {
        void record(T reply);
    }

    /**
     * One request: how to write it (again, on a new connection: waiting requests recompute their wait), how to read its
     * reply, whether it changes the store (a mutation: counted, see {@link StoreProtocol}) and what to note in the
     * journal once it succeeded (run under the lock, in the same hold that read the reply, so a restart in between
     * cannot miss it).
     */
    private record Req<T>(String what, boolean mutating, Writer writer, Reader<T> reader, Journal<T> journal) {
    }

    private boolean journaling() {
        return !reconnect.isZero();
    }

    /**
     * Runs one request under the lock. {@code deadline} (System.nanoTime based, or null for calls that do not wait)
     * bounds the time spent queued behind other threads and reconnecting; {@code timeoutMessage} describes that timeout.
     */
    private <T> T call(Req<T> req, Long deadline, Supplier<String> timeoutMessage) {
        try {
            if (deadline == null) {
                lock.lockInterruptibly();
            } else if (!lock.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                throw new CommTimeoutException("store " + timeoutMessage.get()
                        + " while other threads' requests held the connection (store " + hostPort(address) + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HcommException("interrupted before store " + req.what + " (store " + hostPort(address) + ")");
        }
        try {
            return exchange(req, deadline, timeoutMessage, false);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Lock held. Sends {@code req} and returns its reply, first re-establishing a lost connection and writing again what
     * a restarted server lost. {@code req} null: only that (the watcher); {@code once}: at most one connection attempt,
     * returning null if it failed.
     */
    @SuppressWarnings("unchecked")
    private <T> T exchange(Req<T> req, Long deadline, Supplier<String> timeoutMessage, boolean once) {
        String what = req != null ? req.what : "reconnect";
        while (true) {
            if (closed) throw new HcommException("store client for " + hostPort(address) + " is closed (" + what + ")");
            if (broken != null) throw new HcommException("lost connection to the store at " + hostPort(address) + ": " + broken);
            if (conn == null) {
                Hello h = reconnect(what, deadline, timeoutMessage, once);
                if (h == null) return null;
                Req<?> pending = unanswered;
                if (h.incarnation != incarnation) {
                    unanswered = null; // lost with the old server's data: sent again to the new one below
                    restarted(h.incarnation);
                } else if (h.state == HELLO_APPLIED) {
                    if (pending == null) throw fail(what, "the store says it applied a mutation of this client that was not sent", null);
                    Object reply;
                    try {
                        reply = readReply(pending); // the reply it missed; journaled like any other
                    } catch (ServerError e) {
                        unanswered = null;
                        if (pending == req) throw e;
                        if (pending == restore.peek()) restore.poll();
                        LOG.warn("{}: the store refused {}: {}", this, pending.what, e.getMessage());
                        continue;
                    } catch (IOException e) {
                        lost(e, what); // still unanswered: the next HELLO says APPLIED again
                        continue;
                    }
                    unanswered = null;
                    if (pending == req) return (T) reply;
                    if (pending == restore.peek()) restore.poll();
                    continue; // an interrupted earlier call's mutation, now accounted for
                } else if (h.state == HELLO_NEW) {
                    completed = 0;
                    unanswered = null;
                    if (pending != null) {
                        // The server forgot this client (its connection ended CLIENT_MEMORY ago or more): unknowable.
                        if (pending == restore.peek()) restore.poll();
                        if (pending == req) {
                            throw new HcommException("store " + what + ": the connection to the store at " + hostPort(address)
                                    + " broke before the reply and the store no longer knows this client, so whether it was "
                                    + "applied is unknown (" + lostWhy + ")");
                        }
                    }
                } else {
                    // IN_SYNC: a pending mutation was not applied; ours (req or the restore head) is sent again below,
                    // an interrupted earlier call's is dropped (its caller got an exception, and nothing happened)
                    unanswered = null;
                }
            }
            Req<?> next = restore.isEmpty() ? req : restore.peek();
            if (next == null) return null;
            Conn c = conn;
            Object reply;
            try {
                long serverWaitMs = deadline == null ? 0 : remainingMillis(deadline);
                long soTimeout = serverWaitMs + REPLY_GRACE.toMillis();
                c.channel.socket().setSoTimeout(soTimeout > Integer.MAX_VALUE ? 0 : (int) soTimeout);
                if (next.mutating) unanswered = next;
                next.writer.write(c.out);
                c.out.flush();
                reply = readReply(next);
                unanswered = null;
            } catch (ServerError e) {
                // The server understood and refused; the connection stays in sync.
                unanswered = null;
                if (next == req) throw e;
                restore.poll();
                LOG.warn("{}: the restarted store refused {}: {}", this, next.what, e.getMessage());
                continue;
            } catch (ProtocolException e) {
                throw fail(what, e.getMessage(), e);
            } catch (SocketTimeoutException e) {
                if (!journaling()) throw fail(what, "no reply within " + human(REPLY_GRACE) + " beyond the requested wait", e);
                lost(new IOException("no reply within " + human(REPLY_GRACE) + " beyond the requested wait"), what);
                continue;
            } catch (IOException e) {
                if (closed) throw new HcommException("store client for " + hostPort(address) + " is closed (" + what + ")");
                if (!journaling()) throw fail(what, e.toString(), e);
                lost(e, what);
                if (Thread.currentThread().isInterrupted()) {
                    // the interrupt closed the channel; the next call (or the watcher) connects again and settles a
                    // mutation left unanswered
                    throw new HcommException("interrupted during store " + what + " (store " + hostPort(address) + ")", e);
                }
                continue;
            }
            if (next == req) return (T) reply;
            restore.poll();
        }
    }

    /** Reads the reply of {@code r} (counting it if it is a mutation) and notes it in the journal. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private Object readReply(Req r) throws IOException {
        Object reply;
        try {
            reply = r.reader.read(conn.in);
        } catch (ServerError e) {
            if (r.mutating) completed++;
            throw e;
        }
        if (r.mutating) completed++;
        if (r.journal != null && journaling()) r.journal.record(reply); // restore requests: a conflict check at most
        return reply;
    }

    /**
     * Lock held: the server is a new incarnation, so it lost everything. Queues what this client wrote, to be written
     * again before anything else: the keys it set (CAS wins as a CAS on the absent key), then its counter contributions.
     */
    private void restarted(long newIncarnation) {
        restarts++;
        long was = incarnation;
        incarnation = newIncarnation;
        completed = 0;
        restore.clear();
        for (Map.Entry<String, Written> e : written.entrySet()) {
            String key = e.getKey();
            Written w = e.getValue();
            if (w.byCas) {
                // A decision (shrink's): taken back only if nobody decided otherwise on the new server meanwhile.
                Req<byte[]> cas = casRequest(key, null, w.value, false);
                restore.add(new Req<>(cas.what, true, cas.writer, cas.reader, after -> {
                    if (!Arrays.equals(after, w.value)) {
                        written.remove(key);
                        LOG.warn("{}: after the store restarted another client decided key '{}' before this client could "
                                + "write its own decision back; the store keeps the other one", this, key);
                    }
                }));
            } else {
                byte[] k = encodeKey(key);
                restore.add(new Req<Void>("set '" + key + "'", true, out -> {
                    out.writeByte(OP_SET);
                    writeBytes(out, k);
                    writeBytes(out, w.value);
                }, in -> {
                    expectOk(in, "set '" + key + "'");
                    return null;
                }, null));
            }
        }
        for (Map.Entry<String, Long> e : added.entrySet()) restore.add(addRequest(e.getKey(), e.getValue(), false));
        if (restore.isEmpty()) {
            LOG.info("{}: the store restarted (incarnation {} -> {}); this client wrote nothing to take back", this,
                    Long.toHexString(was), Long.toHexString(newIncarnation));
            return;
        }
        LOG.warn("{}: the store restarted (incarnation {} -> {}) and lost its data; writing back the {} keys and {} counter "
                        + "contributions of this client", this, Long.toHexString(was), Long.toHexString(newIncarnation),
                written.size(), added.size());
    }

    /** Lock held: the connection is gone; remember since when and why. */
    private void lost(IOException why, String during) {
        Conn c = conn;
        conn = null;
        if (c != null) StoreProtocol.closeQuietly(c.channel);
        if (lostWhy == null) {
            lostAt = System.nanoTime();
            lostWhy = (why instanceof EOFException && why.getMessage() == null ? "the store closed the connection" : why.toString())
                    + " (during " + during + ")";
            LOG.info("{}: lost the connection to the store ({}); reconnecting for up to {} (HCOMM_STORE_RECONNECT)",
                    this, lostWhy, human(reconnect));
        }
    }

    /**
     * Lock held, no connection: connects again (with backoff) and says HELLO. Returns the answer; null if {@code once}
     * and the one attempt failed. Throws when the reconnect budget is spent (for good), when {@code deadline} passes (the
     * next call goes on), or when the client is closed.
     */
    private Hello reconnect(String what, Long deadline, Supplier<String> timeoutMessage, boolean once) {
        long giveUp = lostAt + reconnect.toNanos();
        long backoff = BACKOFF_START_MS;
        int attempts = 0;
        int drops = 0;
        Exception last = null;
        while (true) {
            if (closed) throw new HcommException("store client for " + hostPort(address) + " is closed (" + what + ")");
            if (Thread.currentThread().isInterrupted()) {
                throw new HcommException("interrupted while reconnecting to the store at " + hostPort(address) + " (" + what + ")");
            }
            long now = System.nanoTime();
            if (now - giveUp >= 0) {
                broken = lostWhy + "; could not reconnect within " + human(reconnect) + " (HCOMM_STORE_RECONNECT)"
                        + (last == null ? "" : "; last attempt: " + last);
                LOG.warn("{}: giving up on the store: {}", this, broken);
                throw new HcommException("lost connection to the store at " + hostPort(address) + ": " + broken);
            }
            if (deadline != null && now - deadline >= 0) {
                throw new CommTimeoutException("store " + timeoutMessage.get() + ": the store at " + hostPort(address)
                        + " has been unreachable for " + (now - lostAt) / 1_000_000 + " ms (" + lostWhy + "; still trying, for up to "
                        + human(reconnect) + ", HCOMM_STORE_RECONNECT)" + (last == null ? "" : "; last attempt: " + last));
            }
            long end = Math.min(giveUp, now + ATTEMPT_MAX.toNanos());
            if (deadline != null && deadline - end < 0) end = deadline;
            attempts++;
            Attempt a = new Attempt();
            try {
                Conn c = open(address, auth, end, a, this);
                try {
                    connecting = c.channel; // close() aborts a hello the server is slow to answer, too
                    if (closed) throw new IOException("store client closed");
                    Hello h;
                    try {
                        h = hello(c, completed);
                    } finally {
                        connecting = null;
                    }
                    conn = c;
                    // close() sets closed, then closes conn; with both volatile one of us sees the other
                    if (closed) {
                        conn = null;
                        throw new IOException("store client closed");
                    }
                    long downMs = (System.nanoTime() - lostAt) / 1_000_000;
                    LOG.info("{}: reconnected to the store after {} ms ({} attempt(s))", this, downMs, attempts);
                    lostWhy = null;
                    return h;
                } catch (IOException | RuntimeException e) {
                    StoreProtocol.closeQuietly(c.channel);
                    throw e;
                }
            } catch (ServerError e) {
                broken = "the store refused this client's hello: " + e.getMessage();
                throw new HcommException("lost connection to the store at " + hostPort(address) + ": " + broken, e);
            } catch (Auth.AuthException e) {
                boolean drop = e.getMessage().contains("closed the connection");
                if (!drop || ++drops >= MAX_HANDSHAKE_DROPS) {
                    broken = "reconnecting, the store at that address failed the handshake: " + e.getMessage()
                            + " (is it the job's store, with the same HCOMM_SECRET?)";
                    throw new HcommException("lost connection to the store at " + hostPort(address) + ": " + broken, e);
                }
                last = e;
            } catch (ProtocolException e) {
                broken = "reconnecting: " + e.getMessage();
                throw new HcommException("lost connection to the store at " + hostPort(address) + ": " + broken, e);
            } catch (IOException | RuntimeException e) {
                last = e;
            }
            if (once) return null;
            long sleepMs = Math.min(backoff, Math.max(1, TimeUnit.NANOSECONDS.toMillis(giveUp - System.nanoTime())));
            if (deadline != null) sleepMs = Math.min(sleepMs, Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            try {
                if (closing.await(sleepMs, TimeUnit.MILLISECONDS)) continue; // closed: reported at the top
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new HcommException("interrupted while reconnecting to the store at " + hostPort(address) + " (" + what + ")");
            }
            backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
        }
    }

    /**
     * The watcher: every {@link #WATCH_INTERVAL_MS} ms, if no call holds the connection, looks whether it ended (so an
     * idle client notices a store that went away) and, if it did, makes one reconnect attempt and writes back what a
     * restarted store lost. Ends when the client closes or gives up for good.
     */
    private void watch() {
        ByteBuffer one = ByteBuffer.allocate(1);
        while (true) {
            try {
                if (closing.await(WATCH_INTERVAL_MS, TimeUnit.MILLISECONDS)) return;
            } catch (InterruptedException e) {
                return;
            }
            if (!lock.tryLock()) continue; // a call is running: it notices a lost connection itself
            try {
                if (closed || broken != null) return;
                Conn c = conn;
                if (c != null) {
                    IOException gone = probe(c, one);
                    if (gone == null && restore.isEmpty()) continue;
                    if (gone != null) lost(gone, "idle");
                }
                exchange(null, null, null, true);
            } catch (RuntimeException e) {
                LOG.debug("{}: watcher: {}", this, e.toString());
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Lock held: whether the idle connection {@code c} has ended, without sending anything: one non-blocking read (a
     * server says nothing unasked, so any byte or end of stream means the connection is no longer usable). Null: fine.
     */
    private static IOException probe(Conn c, ByteBuffer one) {
        try {
            c.channel.configureBlocking(false);
            try {
                int n = c.channel.read(one.clear());
                if (n < 0) return new EOFException("the store closed the connection");
                if (n > 0) return new IOException("the store sent " + n + " byte(s) nobody asked for");
                return null;
            } finally {
                c.channel.configureBlocking(true);
            }
        } catch (IOException e) {
            return e;
        }
    }

    private HcommException fail(String what, String why, IOException cause) {
        // The reply stream is now at an unknown position: nothing later on it can be trusted.
        broken = why + " (during " + what + ")";
        Conn c = conn;
        conn = null;
        if (c != null) StoreProtocol.closeQuietly(c.channel);
        return new HcommException("lost connection to the store at " + hostPort(address) + " during " + what + ": " + why, cause);
    }

    private static byte readStatus(DataInputStream in, String what) throws IOException {
        byte s = in.readByte();
        if (s == OK || s == MISSING) return s;
        if (s == ERROR) {
            String msg = new String(readKeyBytes(in), StandardCharsets.UTF_8);
            throw new ServerError(msg);
        }
        throw new ProtocolException("store sent reply status " + s + " to " + what);
    }

    private static void expectOk(DataInputStream in, String what) throws IOException {
        if (readStatus(in, what) != OK) throw new ProtocolException("store answered MISSING to " + what);
    }

    /** The server understood the request and refused it; the connection stays in sync. */
    private static final class ServerError extends HcommException {
        private static final long serialVersionUID = 1L;

        ServerError(String message) {
            super(message);
        }
    }

    private static long remainingMillis(long deadline) {
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
    }

    private static String describe(List<String> keys) {
        if (keys.size() <= 16) return keys.toString();
        return keys.subList(0, 16) + " and " + (keys.size() - 16) + " more";
    }
}
