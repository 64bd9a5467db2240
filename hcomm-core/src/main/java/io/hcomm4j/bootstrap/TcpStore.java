package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import io.hcomm4j.bootstrap.StoreRequest.ServerError;
import io.hcomm4j.security.Auth;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
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
    /** Longest single attempt (connect and handshake) of a reconnect, so the watcher never holds the lock long. */
    private static final Duration ATTEMPT_MAX = Duration.ofSeconds(5);
    /** How often the watcher looks at an idle connection: the delay between a store's return and an idle client's. */
    static final long WATCH_INTERVAL_MS = 200;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final InetSocketAddress address;
    private final Auth auth;
    private final InetAddress localAddress;
    /** How long a lost connection is tried again; zero: never. */
    private final Duration reconnect;
    /** Identifies this client to the server across its connections (HELLO). */
    private final long clientId;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile boolean closed;
    /** Counted down by {@link #close()}: wakes backoff sleeps and the watcher at once. */
    private final CountDownLatch closing = new CountDownLatch(1);
    /** A channel being connected by a reconnect, so that {@link #close()} can abort it. */
    private volatile SocketChannel connecting;
    private final Thread watcher;

    // Guarded by lock.
    /** The connection, or null while it is lost; volatile for {@link #close()}, which does not take the lock. */
    private volatile StoreConnection conn;
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
    private StoreRequest<?> unanswered;
    /** Why the client is unusable for good (the reconnect budget ran out, a protocol error), or null. */
    private String broken;
    /** What this client wrote, for a restarted server; only with a reconnect budget. */
    private final WriteBackJournal journal = new WriteBackJournal();
    /** Restarts of the server seen so far (new incarnations); volatile for {@link #restartsSeen()}. */
    private volatile int restarts;

    private TcpStore(StoreConnection.First first, Auth auth, Duration reconnect, long clientId) {
        this.address = first.target();
        this.auth = auth;
        this.conn = first.conn();
        this.incarnation = first.incarnation();
        this.localAddress = first.localAddress();
        this.reconnect = reconnect;
        this.clientId = clientId;
        this.watcher = reconnect.isZero() ? null
                : Thread.ofVirtual().name("hcomm-store-watch-" + address.getPort()).unstarted(this::watch);
    }

    /**
     * Connects to the server at {@code address}, retrying with backoff until it answers or {@code timeout}
     * passes (ranks may start before the server), and proves {@code secret}. A connection lost later is not
     * re-established: every later call throws {@link HcommException}.
     *
     * @param secret the job secret (at least 16 bytes), or null for a server without one (which proves nothing)
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
        return connect(address, secret == null ? Auth.loopbackOnly() : Auth.of(secret), timeout, reconnect);
    }

    /**
     * As {@link #connect(InetSocketAddress, String, Duration, Duration)} with the handshake {@code auth} (a job's, which
     * {@link Bootstrap#auth} makes from its settings), under its TLS if it has one.
     */
    public static TcpStore connect(InetSocketAddress address, Auth auth, Duration timeout, Duration reconnect) {
        java.util.Objects.requireNonNull(auth, "auth");
        if (reconnect == null || reconnect.isNegative()) throw new IllegalArgumentException("reconnect must be >= 0, was " + reconnect);
        long deadline = System.nanoTime() + waitMillis(timeout) * 1_000_000L;
        long clientId = RANDOM.nextLong();
        StoreConnection.First f = StoreConnection.connectFirst(address, auth, deadline, timeout, clientId);
        TcpStore store = new TcpStore(f, auth, reconnect, clientId);
        if (store.watcher != null) store.watcher.start();
        LOG.debug("connected to store at {} after {} attempt(s) (client {})", f.target(), f.attempts(), Long.toHexString(clientId));
        return store;
    }

    /** {@link StoreConnection#open} publishes the channel it connects (null when done), so {@link #close()} can abort it. */
    void connecting(SocketChannel ch) throws IOException {
        connecting = ch;
        if (ch != null && closed) throw new IOException("store client closed");
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
        checkValue(key, value);
        byte[] copy = journaling() ? value.clone() : value; // the caller may reuse its array; a restart needs these bytes
        call(StoreRequest.set(key, copy, r -> journal.set(key, copy)), null, null);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        StoreProtocol.encodeKey(key);
        long deadline = System.nanoTime() + waitMillis(timeout) * 1_000_000L;
        byte[] v = call(StoreRequest.get(key, () -> remainingMillis(deadline)),
                deadline, () -> "get of key '" + key + "' timed out after " + human(timeout));
        if (v == null) {
            throw new CommTimeoutException("store get of key '" + key + "' timed out after " + human(timeout)
                    + ": no rank set it (store " + hostPort(address) + ")");
        }
        return v;
    }

    @Override
    public byte[] tryGet(String key) {
        return call(StoreRequest.tryGet(key), null, null);
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
        List<String> missing = call(StoreRequest.await("await " + describe(list), encoded, () -> remainingMillis(deadline)),
                deadline, () -> "await of keys " + describe(list) + " timed out after " + human(timeout));
        if (!missing.isEmpty()) {
            throw new CommTimeoutException("store await timed out after " + human(timeout) + " waiting for keys "
                    + describe(list) + "; still missing: " + describe(missing) + " (store " + hostPort(address) + ")");
        }
    }

    @Override
    public long add(String key, long delta) {
        return call(StoreRequest.add(key, delta, r -> journal.add(key, delta)), null, null);
    }

    @Override
    public byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        if (expected != null) checkValue(key, expected);
        checkValue(key, desired);
        byte[] copy = journaling() ? desired.clone() : desired;
        return call(StoreRequest.compareAndSet(key, expected, copy, after -> journal.compareAndSet(key, copy, after)), null, null);
    }

    @Override
    public boolean delete(String key) {
        return call(StoreRequest.delete(key, r -> journal.delete(key)), null, null);
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        closing.countDown();
        // Not under the lock: closing the channel is what unblocks a thread stuck in a call.
        StoreConnection c = conn; // a racy read is fine: a connection installed after this is closed by its installer (closed is set)
        if (c != null) c.close();
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

    private boolean journaling() {
        return !reconnect.isZero();
    }

    /**
     * Runs one request under the lock. {@code deadline} (System.nanoTime based, or null for calls that do not wait)
     * bounds the time spent queued behind other threads and reconnecting; {@code timeoutMessage} describes that timeout.
     */
    private <T> T call(StoreRequest<T> req, Long deadline, Supplier<String> timeoutMessage) {
        try {
            if (deadline == null) {
                lock.lockInterruptibly();
            } else if (!lock.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                throw new CommTimeoutException("store " + timeoutMessage.get()
                        + " while other threads' requests held the connection (store " + hostPort(address) + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HcommException("interrupted before store " + req.what() + " (store " + hostPort(address) + ")");
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
    private <T> T exchange(StoreRequest<T> req, Long deadline, Supplier<String> timeoutMessage, boolean once) {
        String what = req != null ? req.what() : "reconnect";
        while (true) {
            if (closed) throw new HcommException("store client for " + hostPort(address) + " is closed (" + what + ")");
            if (broken != null) throw new HcommException("lost connection to the store at " + hostPort(address) + ": " + broken);
            if (conn == null) {
                StoreConnection.Hello h = reconnect(what, deadline, timeoutMessage, once);
                if (h == null) return null;
                StoreRequest<?> pending = unanswered;
                if (h.incarnation() != incarnation) {
                    unanswered = null; // lost with the old server's data: sent again to the new one below
                    restarted(h.incarnation());
                } else if (h.state() == HELLO_APPLIED) {
                    if (pending == null) throw fail(what, "the store says it applied a mutation of this client that was not sent", null);
                    Object reply;
                    try {
                        reply = readReply(pending); // the reply it missed; journaled like any other
                    } catch (ServerError e) {
                        unanswered = null;
                        if (pending == req) throw e;
                        if (pending == journal.nextRestore()) journal.restoreDone();
                        LOG.warn("{}: the store refused {}: {}", this, pending.what(), e.getMessage());
                        continue;
                    } catch (IOException e) {
                        lost(e, what); // still unanswered: the next HELLO says APPLIED again
                        continue;
                    }
                    unanswered = null;
                    if (pending == req) return (T) reply;
                    if (pending == journal.nextRestore()) journal.restoreDone();
                    continue; // an interrupted earlier call's mutation, now accounted for
                } else if (h.state() == HELLO_NEW) {
                    completed = 0;
                    unanswered = null;
                    if (pending != null) {
                        // The server forgot this client (its connection ended StoreSessions.CLIENT_MEMORY ago or more): unknowable.
                        if (pending == journal.nextRestore()) journal.restoreDone();
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
            StoreRequest<?> next = journal.nextRestore() == null ? req : journal.nextRestore();
            if (next == null) return null;
            StoreConnection c = conn;
            Object reply;
            try {
                long serverWaitMs = deadline == null ? 0 : remainingMillis(deadline);
                long soTimeout = serverWaitMs + REPLY_GRACE.toMillis();
                c.channel().socket().setSoTimeout(soTimeout > Integer.MAX_VALUE ? 0 : (int) soTimeout);
                if (next.mutating()) unanswered = next;
                next.writer().write(c.out());
                c.out().flush();
                reply = readReply(next);
                unanswered = null;
            } catch (ServerError e) {
                // The server understood and refused; the connection stays in sync.
                unanswered = null;
                if (next == req) throw e;
                journal.restoreDone();
                LOG.warn("{}: the restarted store refused {}: {}", this, next.what(), e.getMessage());
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
            journal.restoreDone();
        }
    }

    /** Reads the reply of {@code r} (counting it if it is a mutation) and notes it in the journal. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private Object readReply(StoreRequest r) throws IOException {
        Object reply;
        try {
            reply = r.reader().read(conn.in());
        } catch (ServerError e) {
            if (r.mutating()) completed++;
            throw e;
        }
        if (r.mutating()) completed++;
        if (r.journal() != null && journaling()) r.journal().record(reply); // restore requests: a conflict check at most
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
        journal.restarted(this, was, newIncarnation);
    }

    /** Lock held: the connection is gone; remember since when and why. */
    private void lost(IOException why, String during) {
        StoreConnection c = conn;
        conn = null;
        if (c != null) c.close();
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
    private StoreConnection.Hello reconnect(String what, Long deadline, Supplier<String> timeoutMessage, boolean once) {
        long giveUp = lostAt + reconnect.toNanos();
        long backoff = StoreConnection.BACKOFF_START_MS;
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
            StoreConnection.Attempt a = new StoreConnection.Attempt();
            try {
                StoreConnection c = StoreConnection.open(address, auth, end, a, this);
                try {
                    connecting = c.channel(); // close() aborts a hello the server is slow to answer, too
                    if (closed) throw new IOException("store client closed");
                    StoreConnection.Hello h;
                    try {
                        h = c.hello(clientId, completed);
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
                    c.close();
                    throw e;
                }
            } catch (ServerError e) {
                broken = "the store refused this client's hello: " + e.getMessage();
                throw new HcommException("lost connection to the store at " + hostPort(address) + ": " + broken, e);
            } catch (Auth.AuthException e) {
                boolean drop = e.getMessage().contains("closed the connection");
                if (!drop || ++drops >= StoreConnection.MAX_HANDSHAKE_DROPS) {
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
            backoff = Math.min(backoff * 2, StoreConnection.BACKOFF_MAX_MS);
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
                StoreConnection c = conn;
                if (c != null) {
                    IOException gone = c.probe(one);
                    if (gone == null && journal.nextRestore() == null) continue;
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

    private HcommException fail(String what, String why, IOException cause) {
        // The reply stream is now at an unknown position: nothing later on it can be trusted.
        broken = why + " (during " + what + ")";
        StoreConnection c = conn;
        conn = null;
        if (c != null) c.close();
        return new HcommException("lost connection to the store at " + hostPort(address) + " during " + what + ": " + why, cause);
    }

    private static long remainingMillis(long deadline) {
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
    }

    private static String describe(List<String> keys) {
        if (keys.size() <= 16) return keys.toString();
        return keys.subList(0, 16) + " and " + (keys.size() - 16) + " more";
    }
}
