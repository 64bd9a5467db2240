package io.hcomm4j.transport;

import io.hcomm4j.CommAbortedException;
import io.hcomm4j.HcommException;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.security.Auth;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.memory.SharedFiles;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tagged, ordered, reliable messages between the ranks of one job, over TCP or same-host shared memory: one authenticated connection
 * per pair of ranks, opened on first use (the lower rank's attempt wins if both connect at once).
 * Messages up to the eager limit travel with their header; larger ones go as ready-to-send, and their
 * bytes only after the receiver matched them (so an unexpected large message costs no buffer). Matching
 * follows MPI: per communicator, in order of arrival and of posting, by source and tag with wildcards.
 *
 * <p><b>Same host.</b> With {@link #enableShm}, a connection to a rank of this host carries the frames through a pair
 * of shared-memory rings instead of the socket ({@link ShmConduit}); the socket stays as doorbell and death detector.
 * Everything above the byte pipe (matching, eager/rendezvous, credit, fingerprints, failures) is the same, except
 * that a rendezvous message from a registered buffer ({@link MemoryPool}) is read by the receiver straight out of the
 * sender's mapping ({@link Frame#DATA_REF}: one copy).
 *
 * <p><b>Failures.</b> A peer has failed when its connection breaks without a BYE, when it breaks the frame protocol,
 * when nothing came from it for the heartbeat timeout (a {@link Watchdog} sends heartbeats on idle connections and
 * watches what arrives), or when another rank says so (a FAILED notice). Then every op that depends on it fails with
 * {@link PeerFailedException}, the peers this rank is connected to are told (each rank forwards a failure once), and
 * {@link Events#peerFailed} tells the layer above. With heartbeats on, each rank keeps a connection to the next live
 * rank (opened at start, re-opened past a failed one), so the live ranks form a ring over which every failure reaches
 * everyone, even ranks that never talked to the failed one.
 *
 * <p><b>Recovery.</b> With {@code retryMax > 0} on both sides a TCP link is reliable ({@link PeerLink}; a link over
 * shared memory is not: its rings lose nothing while both processes live): a connection that
 * breaks without a BYE, or stays silent for the heartbeat timeout, is re-established instead: both sides try to
 * reconnect (the first attempt at once, then with exponential backoff; when both attempts meet, the lower rank's wins,
 * as at the first connect), the hello says which connection it replaces and the last frame this side received
 * completely, and each side sends again what the other did not receive. A reconnect that is refused (nothing listens at
 * the peer's address any more: its process is gone) fails the peer at once, so a killed process is still noticed in
 * milliseconds; after {@code retryMax} attempts the peer is declared failed as above.
 *
 * <p>Ranks here are world ranks; communicators above translate.
 */
public final class PeerTransport implements AutoCloseable {
    /** Wildcard for source or tag in {@link #recv}. */
    public static final int ANY = -1;
    /** Largest eager frame a receiver accepts from anyone (the configured limit is at most this). */
    static final long MAX_EAGER = 64L << 20;

    private static final Logger LOG = LoggerFactory.getLogger(PeerTransport.class);
    private static final int HELLO_MAGIC = 0x4843484C; // "HCHL"
    private static final int HELLO_BYTES = 32;
    /** After the 32-byte hello: i32 shared-memory offer (0 or {@link #SHM_OFFER}), u16 length of the ring file name, the name. */
    private static final int HELLO_EXT_BYTES = 6;
    private static final int SHM_OFFER = 1;
    private static final int MAX_SHM_NAME = 200;
    /**
     * Last part of the hello: i32 flags ({@link #HELLO_RELIABLE}), i64 epoch (0: a new connection; e: it replaces
     * connection e, which the sender lost), i64 resume (the last frame the sender received completely on the link).
     */
    private static final int HELLO_RESUME_BYTES = 20;
    /** Hello flag: this side keeps a resend log and reconnects (HCOMM_RETRY_MAX &gt; 0). */
    private static final int HELLO_RELIABLE = 1;
    private static final byte ACCEPT = 1;
    /** Not now: the other side keeps its own attempt, or the connection to replace was replaced already. */
    private static final byte REJECT = 2;
    /** A reconnect to a rank that declared this one failed: it will not talk to it again. */
    private static final byte GONE = 3;
    /** Shortest time a reconnect attempt may take (connect, handshake, hello), whatever its window. */
    private static final long MIN_ATTEMPT_NANOS = 50_000_000L;

    final int rank;
    final int size;
    final long timeoutNanos;
    final Progress progress;
    private final long eagerLimit;
    final long unexpectedLimit;
    private final Auth auth;
    private final long jobToken;
    private final Duration connectTimeout;
    private final ServerSocketChannel listener;
    private final Thread acceptor;
    private final PeerLink[] links;
    private final boolean[] failed;
    /** How many peers have failed so far (written under the match lock after {@link #failed}; read without it). */
    private volatile int failures;
    private IntFunction<InetSocketAddress> addressBook;
    /** Same-host rings, or null: TCP to every peer. */
    private volatile ShmOptions shm;
    private final ReentrantLock matchLock = new ReentrantLock();
    private final Map<Long, MatchTable> tables = new HashMap<>();
    volatile boolean closing;
    /**
     * The session closes and its links stop being kept alive: no more reconnects (set by {@link #close} once links being
     * re-established had their chance and what was sent before close was acknowledged).
     */
    volatile boolean linksClosing;
    /** Ranks known to have failed (not those that closed in order), and why; guarded by {@link #matchLock}. */
    private final boolean[] dead;
    private final String[] deadWhy;
    /**
     * Incarnation of each world rank's process: 0 for the first, n for the n-th replacement that took the slot of a
     * failed rank ({@link #revive}). A hello carries the sender's (added to the job token), so a previous incarnation
     * cannot connect as the new one.
     */
    private final long[] incarnations;
    /** Another rank declared this one failed (it was silent too long): no more notices or neighbour connections. */
    private volatile boolean declaredFailed;
    /** Communicators (ids without the channel bits) that were aborted: messages for them are dropped on arrival. */
    private final java.util.Set<Long> deadComms = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private volatile Events events = Events.NONE;
    private final Watchdog watchdog;
    final long heartbeatTimeoutNanos;
    final long heartbeatIntervalNanos;
    /** Reconnect attempts for a lost connection (0: none, links are not reliable) and the first attempt's window. */
    final int retryMax;
    final long retryIntervalNanos;
    /** Connections re-established, frames and bytes sent again for them, duplicate frames dropped (diagnostics, tests). */
    final java.util.concurrent.atomic.AtomicLong reconnects = new java.util.concurrent.atomic.AtomicLong();
    final java.util.concurrent.atomic.AtomicLong framesResent = new java.util.concurrent.atomic.AtomicLong();
    final java.util.concurrent.atomic.AtomicLong bytesResent = new java.util.concurrent.atomic.AtomicLong();
    final java.util.concurrent.atomic.AtomicLong duplicatesDropped = new java.util.concurrent.atomic.AtomicLong();
    /** Replaced shared-memory conduits whose rings could not be unmapped at once (retried at close). */
    private final List<ShmConduit> retired = new java.util.concurrent.CopyOnWriteArrayList<>();

    /**
     * How a test breaks a connection ({@link #drop}, {@link #dropAfter}): {@code RESET} closes with an RST (SO_LINGER 0),
     * {@code CLOSE} closes (the peer reads the end of the stream without a BYE, as when a process dies), {@code SHUTDOWN}
     * shuts both directions down.
     */
    enum Drop { RESET, CLOSE, SHUTDOWN }

    /**
     * Shared memory between ranks of one host.
     *
     * @param dir       directory of the shared-memory files (the same for every rank of a host)
     * @param ringBytes bytes of each direction's ring, a power of two
     * @param sameHost  which world ranks share this host (and want shared memory)
     * @param pool      this session's registered memory: sends from it are read in place by the peer (one copy); may be null
     */
    public record ShmOptions(Path dir, int ringBytes, IntPredicate sameHost, MemoryPool pool) {
    }

    /**
     * Settings the transport needs, taken from CommConfig by the layer above.
     *
     * @param heartbeatTimeout  silence after which a connected peer is declared failed (a reliable link: its connection
     *                          re-established); zero: no heartbeats
     * @param heartbeatInterval heartbeat period of an idle connection
     * @param retryMax          attempts to re-establish a lost connection before its peer is declared failed; 0: none
     * @param retryInterval     window of the first attempt; each next one twice the last, at most 8 times this
     */
    public record Options(Duration timeout, Duration connectTimeout, Duration spinTime, long eagerLimit,
                          long unexpectedLimit, Duration heartbeatTimeout, Duration heartbeatInterval, int retryMax,
                          Duration retryInterval) {
        /** Without heartbeats and reconnects. */
        public Options(Duration timeout, Duration connectTimeout, Duration spinTime, long eagerLimit, long unexpectedLimit) {
            this(timeout, connectTimeout, spinTime, eagerLimit, unexpectedLimit, Duration.ZERO, Duration.ZERO);
        }

        /** Without reconnects. */
        public Options(Duration timeout, Duration connectTimeout, Duration spinTime, long eagerLimit, long unexpectedLimit,
                       Duration heartbeatTimeout, Duration heartbeatInterval) {
            this(timeout, connectTimeout, spinTime, eagerLimit, unexpectedLimit, heartbeatTimeout, heartbeatInterval, 0,
                    Duration.ofMillis(100));
        }

        /** The same with {@code retryMax} reconnect attempts, the first one's window {@code retryInterval}. */
        public Options withRetry(int retryMax, Duration retryInterval) {
            return new Options(timeout, connectTimeout, spinTime, eagerLimit, unexpectedLimit, heartbeatTimeout,
                    heartbeatInterval, retryMax, retryInterval);
        }
    }

    /**
     * What the transport tells the layer above. Every method is called without any transport lock held, on a transport
     * thread (the poller, the watchdog, or a connecting thread): it must not block for long.
     */
    public interface Events {
        /** Nothing to tell anybody. */
        Events NONE = new Events() { };

        /** World rank {@code rank} failed (once per rank); {@code why} says how this rank learned it. */
        default void peerFailed(int rank, String why) { }

        /** World rank {@code by} declared this rank failed (this rank was silent longer than its heartbeat timeout). */
        default void declaredFailed(int by, String why) { }

        /** World rank {@code from} aborted communicator {@code commId}. */
        default void abortNotice(long commId, int from) { }

        /** World rank {@code from} has an op stuck waiting for this rank and asks for this rank's state. */
        default void statusRequested(int from) { }

        /** The watchdog's period (every few hundred ms at most), on the watchdog thread. */
        default void tick(long nowNanos) { }
    }


    private PeerTransport(int rank, int size, InetAddress bind, Auth auth, long jobToken, Options o) throws IOException {
        this.rank = rank;
        this.size = size;
        this.auth = auth;
        this.jobToken = jobToken;
        this.timeoutNanos = o.timeout().toNanos();
        this.connectTimeout = o.connectTimeout();
        this.eagerLimit = o.eagerLimit();
        this.unexpectedLimit = o.unexpectedLimit();
        this.progress = new Progress("hcomm-progress-" + rank, o.spinTime().toNanos());
        this.links = new PeerLink[size];
        this.failed = new boolean[size];
        this.dead = new boolean[size];
        this.deadWhy = new String[size];
        this.incarnations = new long[size];
        this.heartbeatTimeoutNanos = o.heartbeatTimeout().toNanos();
        this.heartbeatIntervalNanos = o.heartbeatInterval().toNanos();
        this.retryMax = o.retryMax();
        this.retryIntervalNanos = o.retryInterval().toNanos();
        for (int i = 0; i < size; i++) links[i] = new PeerLink(this, i);
        this.listener = ServerSocketChannel.open();
        listener.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        listener.bind(new InetSocketAddress(bind, 0), Math.max(64, size));
        this.acceptor = Thread.ofPlatform().daemon().name("hcomm-accept-" + rank).unstarted(this::acceptLoop);
        this.watchdog = new Watchdog(this);
    }

    /**
     * Opens the listener on {@code bind} (an ephemeral port). Call {@link #start} once every rank's address
     * is known.
     *
     * @param jobToken a number every rank of this job shares (from the store), so connections from another
     *                 job that happens to use the same secret are refused
     */
    public static PeerTransport open(int rank, int size, InetAddress bind, Auth auth, long jobToken, Options options) {
        try {
            return new PeerTransport(rank, size, bind, auth, jobToken, options);
        } catch (IOException e) {
            throw new HcommException("rank " + rank + ": cannot listen on " + bind.getHostAddress() + ": " + e.getMessage(), e);
        }
    }

    /** Number of ranks of the job (world). */
    public int worldSize() {
        return size;
    }

    /** The address peers connect to. */
    public InetSocketAddress listenAddress() {
        try {
            return (InetSocketAddress) listener.getLocalAddress();
        } catch (IOException e) {
            throw new HcommException("listener closed", e);
        }
    }

    /** Talk to the peers {@code options.sameHost()} names through shared-memory rings (call before {@link #start}). */
    /**
     * Tells the progress engine that this host runs more ranks than this process has CPUs: waiters then yield
     * the core from their first empty poll instead of spinning flat out for a while (the rank they wait for may
     * need this very core).
     */
    public void oversubscribed(boolean yes) {
        progress.oversubscribed = yes;
    }

    public void enableShm(ShmOptions options) {
        this.shm = options;
    }

    /**
     * What carries the bytes to world rank {@code peer} now: {@code "shm"}, {@code "tcp"}, {@code "self"}, or {@code "none"}
     * (not connected yet, or the connection is gone). Diagnostics and tests.
     */
    public String transportTo(int peer) {
        if (peer == rank) return "self";
        PeerLink l = links[peer];
        Conduit c = l.ch;
        return l.state == PeerLink.State.CONNECTED && c != null ? c.kind() : "none";
    }

    /**
     * Connections re-established so far after a loss (each side of a pair counts its own), for diagnostics and tests.
     */
    public long reconnects() {
        return reconnects.get();
    }

    /** Test hook: breaks the connection to {@code peer} now, as {@code how} says, without a BYE; false if it is not connected. */
    boolean drop(int peer, Drop how) {
        PeerLink l = links[peer];
        boolean[] dropped = new boolean[1];
        progress.withToken(() -> {
            Conduit c = l.ch;
            if (l.state != PeerLink.State.CONNECTED || c == null) return;
            try {
                c.abort(how);
            } catch (IOException ignored) {
                // broken either way
            }
            l.lost(new IOException("connection dropped by a test hook (" + how + ")"));
            dropped[0] = true;
        });
        return dropped[0];
    }

    /**
     * Test hook: as if the network to every peer were cut: reconnect attempts fail (no route) and incoming reconnects
     * are turned down.
     */
    volatile boolean unreachable;

    /** Test hook: the poller breaks the connection to {@code peer} as {@code how} says once it has read {@code bytes} more from it. */
    void dropAfter(int peer, long bytes, Drop how) {
        PeerLink l = links[peer];
        l.dropHow = how;
        l.dropAtRx = l.rxProgress() + bytes;
    }

    /** Where failures, abort notices and status requests go (call before {@link #start}). */
    public void setEvents(Events events) {
        this.events = events == null ? Events.NONE : events;
    }

    /**
     * Starts accepting, progressing and the watchdog; {@code addressBook} gives each peer's listen address. With
     * heartbeats on, the connection to the next rank is opened now, in the background.
     */
    public void start(IntFunction<InetSocketAddress> addressBook) {
        start(addressBook, true);
    }

    /**
     * As {@link #start(IntFunction)}; with {@code neighbour} false the connection to the next rank waits for
     * {@link #connectNeighbourNow()} (a replacement process whose peers do not know it yet).
     */
    public void start(IntFunction<InetSocketAddress> addressBook, boolean neighbour) {
        this.addressBook = addressBook;
        progress.start();
        acceptor.start();
        watchdog.start();
        if (neighbour) connectNeighbour();
    }

    /** With heartbeats on: opens the connection to the next live rank now, if it is not open (in the background). */
    public void connectNeighbourNow() {
        connectNeighbour();
    }

    /**
     * A replacement process takes world rank {@code p}'s slot (grow): {@code p} must be known to have failed; its old
     * connection state is dropped, it is live again with incarnation {@code incarnation} (its hellos must carry it), and
     * the next connection to it goes to the address the address book gives now. Messages the old process sent that
     * were not received yet are dropped.
     *
     * @throws IllegalStateException if {@code p} is not known to have failed
     */
    public void revive(int p, long incarnation) {
        matchLock.lock();
        try {
            PeerLink old = links[p];
            if (p == rank || !dead[p] || (old.state != PeerLink.State.FAILED && old.state != PeerLink.State.CLOSED
                    && old.state != PeerLink.State.IDLE)) {
                throw new IllegalStateException("rank " + rank + ": rank " + p + " is not known to have failed (state "
                        + old.state + "); only a failed rank's slot can be taken over");
            }
            if (old.state == PeerLink.State.IDLE) {
                synchronized (old) {
                    old.state = PeerLink.State.FAILED;
                    old.notifyAll();
                }
            }
            incarnations[p] = incarnation;
            // what the old process sent and nobody received: dropped (its credit belonged to the old connection)
            for (MatchTable table : tables.values()) table.unexpected.removeIf(u -> u.src == p);
            links[p] = new PeerLink(this, p);
            failed[p] = false;
            dead[p] = false;
            deadWhy[p] = null;
        } finally {
            matchLock.unlock();
        }
        connectNeighbour();
    }

    /** Sets the incarnation of world rank {@code p} (a replacement learns its peers' before {@link #start}). */
    public void incarnation(int p, long incarnation) {
        incarnations[p] = incarnation;
    }

    /**
     * Treats world rank {@code p} as failed from the start, without telling anybody (a replacement process: the slots
     * of failed ranks not taken over); call before {@link #start}.
     */
    public void assumeFailed(int p, String why) {
        matchLock.lock();
        try {
            dead[p] = true;
            deadWhy[p] = why;
            failed[p] = true;
        } finally {
            matchLock.unlock();
        }
        synchronized (links[p]) {
            links[p].state = PeerLink.State.FAILED;
        }
    }

    /** Whether heartbeats run (HCOMM_HEARTBEAT_TIMEOUT > 0). */
    boolean heartbeats() {
        return heartbeatTimeoutNanos > 0;
    }

    PeerLink[] links() {
        return links;
    }

    Events events() {
        return events;
    }

    /**
     * With heartbeats on: opens (in the background) the connection to the next live rank after this one, unless it is
     * open. Each rank doing so keeps the live ranks in a ring of connections, over which failure notices reach
     * everyone. With two live ranks only the lower one connects.
     */
    private void connectNeighbour() {
        if (!heartbeats() || closing || declaredFailed || size < 2) return;
        int next = -1;
        int live = 0;
        matchLock.lock();
        try {
            for (int i = 1; i < size; i++) {
                int p = (rank + i) % size;
                if (!dead[p]) {
                    live++;
                    if (next < 0) next = p;
                }
            }
        } finally {
            matchLock.unlock();
        }
        if (next < 0 || (live == 1 && next < rank)) return;
        if (links[next].state == PeerLink.State.IDLE) connectInBackground(next);
    }

    Logger log() {
        return LOG;
    }

    /**
     * True if threads other than the caller may read and write {@code buf}: the transport's threads and any
     * waiting thread do the I/O, so a segment confined to one thread cannot be used.
     */
    public boolean usableFromAnyThread(MemorySegment buf) {
        return buf.isAccessibleBy(acceptor);
    }

    // ---------------------------------------------------------------------- same-host shared conditions

    /**
     * Waits until {@code w} is done or {@code deadline} ({@link System#nanoTime()}) passed, driving this transport's
     * progress meanwhile (see {@link SharedWait}). Allocates nothing unless it blocks.
     *
     * @return true if {@code w} is done
     */
    public boolean await(SharedWait w, long deadline) {
        return progress.awaitShared(w, deadline);
    }

    /**
     * Rings the doorbell of world rank {@code peer}: its progress engine wakes if it blocks, so a thread of it that
     * sleeps on a {@link SharedWait} looks again. Does nothing unless the pair is connected through shared memory.
     */
    /** Wakes this process's own progress engine, so a waiter blocked in it looks again at what it waits for. */
    public void wakeLocal() {
        progress.wakeup();
    }

    public void wake(int peer) {
        if (links[peer].ch instanceof ShmConduit c) c.ringShared();
    }

    /**
     * Connects to world rank {@code peer} now if it is not connected yet (waiting at most until {@code deadline}), and
     * returns what carries messages to it ({@link #transportTo}); a failed connection throws
     * {@link PeerFailedException}. Same-host collectives connect to every peer first: the connection is how a peer's
     * death is noticed and how a sleeping peer is woken.
     */
    public String connect(int peer, long deadline) {
        if (peer == rank) return "self";
        linkTo(peer, deadline);
        return transportTo(peer);
    }

    /**
     * The prefix of the names of world rank {@code peer}'s shared-memory files (its process's; a file's name is the
     * prefix followed by the file's sequence number), learnt in the hello of a shared-memory connection; null if the
     * pair is not connected through shared memory.
     */
    public String peerFilePrefix(int peer) {
        if (peer == rank) return SharedFiles.ownPrefix();
        return links[peer].ch instanceof ShmConduit c ? c.peerPrefix : null;
    }

    /** The directory of shared-memory files, or null if shared memory is not enabled. */
    public Path shmDir() {
        ShmOptions so = shm;
        return so == null ? null : so.dir();
    }

    /** How many peers have failed (lost connection, or closed their session) so far; cheap, for polling loops. */
    public int failures() {
        return failures;
    }

    /** Whether world rank {@code peer} has failed or closed its session. */
    public boolean failed(int peer) {
        // the volatile read orders the plain one after it: a failure counted is a failure seen
        return failures != 0 && failed[peer];
    }

    /** The exception an op ({@code what}) that depends on the failed world rank {@code peer} fails with. */
    public PeerFailedException failure(int peer, String what) {
        return peerFailed(peer, what, null);
    }

    /** True once {@link #close()} began. */
    public boolean isClosing() {
        return closing;
    }

    // ------------------------------------------------------------------------------------------ user ops

    /** Starts sending {@code buf} to world rank {@code dst}. Arguments were checked by the caller. */
    public SendRequest send(long commId, int dst, int tag, MemorySegment buf) {
        return send(commId, dst, tag, buf, 0);
    }

    /** As {@link #send(long, int, int, MemorySegment)}, carrying {@code flags} (a collective's fingerprint) in the frame. */
    public SendRequest send(long commId, int dst, int tag, MemorySegment buf, int flags) {
        return send(commId, dst, tag, buf, flags, null);
    }

    /**
     * As {@link #send(long, int, int, MemorySegment, int)}; a {@link PeerFailedException} it fails with names ranks as
     * {@code rankMap[worldRank]} (null: world ranks).
     */
    public SendRequest send(long commId, int dst, int tag, MemorySegment buf, int flags, int[] rankMap) {
        SendRequest s = new SendRequest(this, commId, dst, tag, buf, flags, rankMap);
        if (closing) {
            s.abort("failed: the session is closed");
            return s;
        }
        if (dst == rank) {
            sendToSelf(s);
            return s;
        }
        PeerLink l = links[dst];
        if (l.state != PeerLink.State.CONNECTED) {
            try {
                l = linkTo(dst, System.nanoTime() + timeoutNanos);
            } catch (HcommException e) {
                s.fail(e);
                return s;
            }
        }
        boolean ok;
        int eager = s.size <= eagerLimit ? l.sendEager(flags, commId, tag, buf, s) : PeerLink.NO_CREDIT;
        if (eager != PeerLink.NO_CREDIT) {
            ok = eager == PeerLink.SENT;
        } else {
            s.msgId = l.nextMsgId();
            l.awaitingCts.put(s.msgId, s);
            ok = l.sendFrame(Frame.RTS, flags, commId, tag, s.size, s.msgId, null, null);
            if (!ok) l.awaitingCts.remove(s.msgId);
        }
        if (!ok) s.fail(peerFailed(dst, "send to rank " + dst, null));
        return s;
    }

    /** Posts a receive from world rank {@code src} (or {@link #ANY}) with {@code tag} (or {@link #ANY}). */
    public RecvRequest recv(long commId, int src, int tag, MemorySegment buf) {
        return recv(commId, src, tag, buf, null);
    }

    /** As {@link #recv(long, int, int, MemorySegment)}; the Status reports {@code sourceMap[worldSource]} (null: the world rank). */
    public RecvRequest recv(long commId, int src, int tag, MemorySegment buf, int[] sourceMap) {
        return recv(new RecvRequest(this, commId, src, tag, buf, sourceMap, false, 0));
    }

    /**
     * Posts a receive that takes only a message carrying {@code expectFlags}; a matching message with other flags
     * fails it with {@link FingerprintMismatchException} (the message is consumed: its sender completes).
     */
    public RecvRequest recvChecked(long commId, int src, int tag, MemorySegment buf, int expectFlags) {
        return recv(new RecvRequest(this, commId, src, tag, buf, null, true, expectFlags));
    }

    private RecvRequest recv(RecvRequest r) {
        long commId = r.commId;
        int src = r.src;
        if (closing) {
            r.fail(new CommAbortedException("rank " + rank + ": " + r.describe() + " failed: the session is closed"));
            return r;
        }
        Runnable after = null;
        matchLock.lock();
        try {
            MatchTable table = table(commId);
            Unexpected u = table.takeUnexpected(r);
            if (u != null) {
                after = deliverUnexpected(r, u);
            } else if (src != ANY && failed[src]) {
                after = () -> r.fail(peerFailed(src, r.describe(), null));
            } else {
                table.posted.add(r);
            }
        } finally {
            matchLock.unlock();
        }
        if (after != null) after.run();
        else if (src != ANY && src != rank && links[src].state == PeerLink.State.IDLE) connectInBackground(src);
        return r;
    }

    /**
     * The status of the first message from {@code src} (or {@link #ANY}) with {@code tag} (or {@link #ANY}) that a
     * receive posted now would get, or {@code null} if none has arrived. Source and tag are world rank and tag.
     */
    public io.hcomm4j.Status iprobe(long commId, int src, int tag, int[] sourceMap) {
        matchLock.lock();
        try {
            Unexpected u = table(commId).peekUnexpected(src, tag);
            return u == null ? null : new io.hcomm4j.Status(sourceMap == null ? u.src : sourceMap[u.src], u.tag, u.size);
        } finally {
            matchLock.unlock();
        }
    }

    /** Completes with the status of the first matching message once one can be received (it is not received). */
    public ProbeRequest probe(long commId, int src, int tag, int[] sourceMap) {
        ProbeRequest p = new ProbeRequest(this, commId, src, tag, sourceMap);
        if (closing) {
            p.fail(new CommAbortedException("rank " + rank + ": " + p.describe() + " failed: the session is closed"));
            return p;
        }
        Unexpected found = null;
        boolean dead = false;
        matchLock.lock();
        try {
            MatchTable table = table(commId);
            Unexpected u = table.peekUnexpected(src, tag);
            if (u != null) found = u;
            else if (src != ANY && failed[src]) dead = true;
            else table.probes.add(p);
        } finally {
            matchLock.unlock();
        }
        if (found != null) p.succeedWith(found.src, found.tag, found.size);
        else if (dead) p.fail(peerFailed(src, p.describe(), null));
        else if (src != ANY && src != rank && links[src].state == PeerLink.State.IDLE) connectInBackground(src);
        return p;
    }

    private static void succeedProbes(List<ProbeRequest> probed, int src, int tag, long size) {
        if (probed == null) return;
        for (ProbeRequest p : probed) p.succeedWith(src, tag, size);
    }

    /** Matches a recv with an unexpected message (match lock held); returns what to run after unlocking. */
    private Runnable deliverUnexpected(RecvRequest r, Unexpected u) {
        r.matchedSrc = u.src;
        r.matchedTag = u.tag;
        r.matchedSize = u.size;
        FingerprintMismatchException wrong = r.mismatch(u.src, u.flags);
        if (wrong != null || u.size > r.buf.byteSize()) {
            Runnable refuse = u.data != null ? null : refuseRendezvous(u);
            if (u.data != null) releaseUnexpected(u);
            RuntimeException failure = wrong != null ? wrong : truncated(r, u.size);
            return () -> {
                if (refuse != null) refuse.run();
                r.fail(failure);
            };
        }
        if (u.data != null) {
            MemorySegment.copy(MemorySegment.ofArray(u.data), 0, r.buf, 0, u.size);
            releaseUnexpected(u);
            return r::succeedMatched;
        }
        if (u.selfSend != null) {
            MemorySegment.copy(u.selfSend.buf, 0, r.buf, 0, u.size);
            SendRequest s = u.selfSend;
            return () -> {
                s.succeed(null);
                r.succeedMatched();
            };
        }
        // a rendezvous RTS: ask for the data
        PeerLink l = links[u.src];
        r.msgId = u.msgId;
        l.awaitingData.put(u.msgId, r);
        return () -> {
            if (!l.sendFrame(Frame.CTS, 0, u.commId, u.tag, 0, u.msgId, null, null)) {
                l.awaitingData.remove(u.msgId);
                r.fail(peerFailed(u.src, r.describe(), null));
            }
        };
    }

    private Runnable refuseRendezvous(Unexpected u) {
        if (u.selfSend != null) {
            SendRequest s = u.selfSend;
            return () -> s.succeed(null);
        }
        PeerLink l = links[u.src];
        return () -> l.sendFrame(Frame.CTS, Frame.CTS_DISCARD, u.commId, u.tag, 0, u.msgId, null, null);
    }

    private void releaseUnexpected(Unexpected u) {
        if (u.src != rank) links[u.src].consumed(u.size + Frame.EAGER_OVERHEAD);
    }

    private IllegalArgumentException truncated(RecvRequest r, long messageSize) {
        return new IllegalArgumentException("rank " + rank + ": " + r.describe() + ": buf of " + r.buf.byteSize()
                + " bytes is smaller than the message of " + messageSize + " bytes from rank " + r.matchedSrc
                + " (tag " + r.matchedTag + ")");
    }

    private void sendToSelf(SendRequest s) {
        Runnable after;
        matchLock.lock();
        try {
            MatchTable table = table(s.commId);
            RecvRequest r = table.takePosted(rank, s.tag);
            if (r != null) {
                r.matchedSrc = rank;
                r.matchedTag = s.tag;
                r.matchedSize = s.size;
                FingerprintMismatchException wrong = r.mismatch(rank, s.flags);
                if (wrong != null || s.size > r.buf.byteSize()) {
                    RuntimeException failure = wrong != null ? wrong : truncated(r, s.size);
                    after = () -> {
                        s.succeed(null);
                        r.fail(failure);
                    };
                } else {
                    MemorySegment.copy(s.buf, 0, r.buf, 0, s.size);
                    after = () -> {
                        s.succeed(null);
                        r.succeedMatched();
                    };
                }
            } else if (s.size <= eagerLimit) {
                byte[] copy = s.buf.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                List<ProbeRequest> probed = table.addUnexpected(new Unexpected(s.commId, rank, s.tag, s.size, copy, 0, null, s.flags));
                after = () -> {
                    s.succeed(null);
                    succeedProbes(probed, rank, s.tag, s.size);
                };
            } else {
                List<ProbeRequest> probed = table.addUnexpected(new Unexpected(s.commId, rank, s.tag, s.size, null, 0, s, s.flags));
                after = probed == null ? null : () -> succeedProbes(probed, rank, s.tag, s.size);
            }
        } finally {
            matchLock.unlock();
        }
        if (after != null) after.run();
    }

    void abandonSend(SendRequest s) {
        if (s.dst == rank) {
            matchLock.lock();
            try {
                table(s.commId).unexpected.removeIf(u -> u.selfSend == s);
            } finally {
                matchLock.unlock();
            }
        }
        // a remote RTS stays known: if its CTS comes, the receiver is told the sender gave up
        s.abort("was abandoned after its deadline");
    }

    /** Fingerprint watch of one collective op: its expected flags and what to do when a message carries others. */
    record Watch(int flags, java.util.function.Consumer<FingerprintMismatchException> onMismatch) {
    }

    /**
     * Watches messages of {@code commId} with {@code tag} (one collective op) while it runs: any such message
     * carrying other flags than {@code flags}, matched or not (already waiting, or arriving later), is reported
     * to {@code onMismatch} once, on the thread that saw it. Even a message for which no receive is posted
     * (the peer's algorithm differs because its root or op differs) reveals the mismatch, instead of a wait
     * until the timeout.
     */
    public void watch(long commId, int tag, int flags, java.util.function.Consumer<FingerprintMismatchException> onMismatch) {
        FingerprintMismatchException found = null;
        matchLock.lock();
        try {
            MatchTable table = table(commId);
            table.watches.put(tag, new Watch(flags, onMismatch));
            for (Unexpected u : table.unexpected) {
                if (u.tag == tag && u.flags != flags) {
                    found = new FingerprintMismatchException(u.src, u.flags, flags);
                    table.watches.remove(tag);
                    break;
                }
            }
        } finally {
            matchLock.unlock();
        }
        if (found != null) onMismatch.accept(found);
    }

    /** Ends a {@link #watch}. */
    public void unwatch(long commId, int tag) {
        matchLock.lock();
        try {
            MatchTable table = tables.get(commId);
            if (table != null) table.watches.remove(tag);
        } finally {
            matchLock.unlock();
        }
    }

    /** A receive or probe whose waiter gave up: withdraw it from its match table and fail it. */
    void abandonWaiting(Request<?> r) {
        withdraw(r, new CommAbortedException("rank " + rank + ": " + r.describe() + " was abandoned after its deadline"));
    }

    /**
     * Fails {@code r} with {@code cause}; a receive or probe still waiting in its match table is taken out first, so
     * no later message lands in its buffer (a receive already taking data finishes taking it).
     */
    public void withdraw(Request<?> r, Throwable cause) {
        matchLock.lock();
        try {
            MatchTable table = tables.get(r.commId);
            if (table != null) {
                table.posted.remove(r);
                table.probes.remove(r);
            }
        } finally {
            matchLock.unlock();
        }
        r.fail(cause);
    }

    /** Whether a message from {@code src} with {@code tag} matches a wanted source and tag (either may be {@link #ANY}). */
    static boolean matches(int wantSrc, int wantTag, int src, int tag) {
        return (wantSrc == ANY || wantSrc == src) && (wantTag == ANY || wantTag == tag);
    }

    void onFinished(Request<?> r) {
        // hook for accounting and monitoring (per-op metrics come with the monitoring layer)
    }

    // ---------------------------------------------------------------------------------- frames arriving

    /** An EAGER header arrived on {@code l}: its payload goes to a matching posted receive, or to a new buffer. */
    void onEager(PeerLink l, long commId, int tag, long length, int flags) {
        if (!deadComms.isEmpty() && deadComms.contains(baseId(commId))) {
            // for an aborted communicator: read and drop, and give the credit back
            l.consumed(length + Frame.EAGER_OVERHEAD);
            l.expectPayload(null, length, null, null, commId, tag, flags);
            return;
        }
        RecvRequest r;
        matchLock.lock();
        try {
            r = table(commId).takePosted(l.peer, tag);
        } finally {
            matchLock.unlock();
        }
        if (r != null) {
            r.matchedSrc = l.peer;
            r.matchedTag = tag;
            r.matchedSize = length;
            l.consumed(length + Frame.EAGER_OVERHEAD);
            FingerprintMismatchException wrong = r.mismatch(l.peer, flags);
            if (wrong != null) {
                l.expectPayload(null, length, null, null, commId, tag, flags);
                r.fail(wrong);
            } else if (length > r.buf.byteSize()) {
                l.expectPayload(null, length, null, null, commId, tag, flags);
                r.fail(truncated(r, length));
            } else {
                l.expectPayload(r.buf, length, r, null, commId, tag, flags);
            }
        } else {
            byte[] data = new byte[(int) length];
            l.expectPayload(MemorySegment.ofArray(data), length, null, data, commId, tag, flags);
        }
    }

    /** An unexpected eager payload is complete: match it with a recv posted meanwhile, or queue it. */
    void onUnexpectedComplete(PeerLink l, long commId, int tag, byte[] data, int flags) {
        Runnable after = null;
        matchLock.lock();
        try {
            MatchTable table = table(commId);
            Unexpected u = new Unexpected(commId, l.peer, tag, data.length, data, 0, null, flags);
            RecvRequest r = table.takePosted(l.peer, tag);
            if (r != null) {
                after = deliverUnexpected(r, u);
            } else {
                List<ProbeRequest> probed = table.addUnexpected(u);
                if (probed != null) after = () -> succeedProbes(probed, u.src, u.tag, u.size);
            }
        } finally {
            matchLock.unlock();
        }
        if (after != null) after.run();
    }

    /** An RTS arrived: match it now (and send CTS) or keep it as unexpected. */
    void onRts(PeerLink l, long commId, int tag, long length, long msgId, int flags) {
        if (!deadComms.isEmpty() && deadComms.contains(baseId(commId))) {
            l.sendFrame(Frame.CTS, Frame.CTS_DISCARD, commId, tag, 0, msgId, null, null); // aborted: the sender completes
            return;
        }
        Runnable after;
        matchLock.lock();
        try {
            MatchTable table = table(commId);
            Unexpected u = new Unexpected(commId, l.peer, tag, length, null, msgId, null, flags);
            RecvRequest r = table.takePosted(l.peer, tag);
            if (r != null) {
                after = deliverUnexpected(r, u);
            } else {
                List<ProbeRequest> probed = table.addUnexpected(u);
                after = probed == null ? null : () -> succeedProbes(probed, u.src, u.tag, u.size);
            }
        } finally {
            matchLock.unlock();
        }
        if (after != null) after.run();
    }

    // -------------------------------------------------------------------------------- one copy (shm only)

    /** Rendezvous sends whose data went as DATA_REF (the peer read it in place), for diagnostics and tests. */
    final java.util.concurrent.atomic.AtomicLong oneCopySends = new java.util.concurrent.atomic.AtomicLong();
    private final String ownFilePrefix = SharedFiles.ownPrefix();
    /** The last registered file a send came from and its sequence number (poller only: a one-entry cache). */
    private Path lastRefFile;
    private long lastRefSeq;

    /**
     * The CTS for {@code s} came: send its data. To a peer on this host, a buffer from this session's memory pool goes as
     * a DATA_REF (where it lies in our file; the peer copies it straight out and answers DATA_DONE); anything else
     * streams through the link (through the ring for a peer on this host: two copies, pipelined).
     */
    void sendData(PeerLink l, SendRequest s, long msgId) {
        ShmOptions so = shm;
        if (l.ch instanceof ShmConduit c && so != null && so.pool() != null && s.size > 0) {
            var reg = so.pool().lookup(s.buf);
            long seq = reg.isEmpty() ? -1 : fileSequence(reg.get().file());
            if (seq >= 0) {
                long offset = reg.get().offset();
                l.awaitingDone.put(msgId, s);
                oneCopySends.incrementAndGet();
                if (!l.sendFrame(Frame.DATA_REF, (int) offset, seq, (int) (offset >>> 32), s.size, msgId, null, null)
                        && l.awaitingDone.remove(msgId) != null) {
                    s.fail(peerFailed(l.peer, s.describe(), null));
                }
                return;
            }
        }
        l.sendFrame(Frame.DATA, 0, s.commId, s.tag, s.size, msgId, s.buf, s);
    }

    /** The sequence number of our pool file {@code file}, or -1 if it is not one of ours. */
    private long fileSequence(Path file) {
        if (file == lastRefFile) return lastRefSeq;
        String name = file.getFileName().toString();
        long seq = name.startsWith(ownFilePrefix) ? SharedFiles.sequence(name) : -1;
        lastRefFile = file;
        lastRefSeq = seq;
        return seq;
    }

    /** A DATA_REF came: copy the message out of the sender's file into the receive buffer, then tell the sender. */
    void onDataRef(PeerLink l, long msgId, long fileSeq, long offset, long length) throws PeerLink.ProtocolException {
        if (!(l.ch instanceof ShmConduit c)) throw new PeerLink.ProtocolException("DATA_REF over TCP");
        RecvRequest r = l.awaitingData.remove(msgId);
        if (r == null) throw new PeerLink.ProtocolException("DATA_REF for unknown message " + msgId);
        if (length != r.matchedSize) {
            throw new PeerLink.ProtocolException("DATA_REF of " + length + " bytes for a message of " + r.matchedSize);
        }
        MemorySegment file;
        try {
            file = c.peerFile(fileSeq);
        } catch (IOException e) {
            l.sendFrame(Frame.DATA_DONE, Frame.DONE_FAILED, 0, 0, 0, msgId, null, null);
            r.fail(new HcommException("rank " + rank + ": " + r.describe() + ": cannot map the buffer of rank " + l.peer
                    + " to read the message in place: " + e.getMessage(), e));
            return;
        }
        if (offset < 0 || offset > file.byteSize() - length) {
            throw new PeerLink.ProtocolException("DATA_REF of [" + offset + ", +" + length + ") beyond a file of " + file.byteSize());
        }
        if (!r.finished()) MemorySegment.copy(file, offset, r.buf, 0, length); // a failed receive no longer owns its buffer
        l.sendFrame(Frame.DATA_DONE, 0, 0, 0, 0, msgId, null, null);
        if (!r.isDone()) r.succeedMatched();
    }

    /** The peer read a DATA_REF message of ours: its send is complete. */
    void onDataDone(PeerLink l, long msgId, int flags) throws PeerLink.ProtocolException {
        if (!(l.ch instanceof ShmConduit)) throw new PeerLink.ProtocolException("DATA_DONE over TCP");
        SendRequest s = l.awaitingDone.remove(msgId);
        if (s == null) throw new PeerLink.ProtocolException("DATA_DONE for unknown message " + msgId);
        if ((flags & Frame.DONE_FAILED) != 0) {
            s.fail(new HcommException("rank " + rank + ": " + s.describe() + ": rank " + l.peer
                    + " could not map this buffer to read it in place (is HCOMM_SHM_DIR the same for both?)"));
        } else {
            s.succeed(null);
        }
    }

    /**
     * A peer's connection broke, or could not be made: fail every op that depended on it. {@code wasConnected}: the
     * connection existed, so (without a BYE) this is evidence that the peer failed, which the others are told; a
     * connection that could not be made fails only this rank's ops (the peer may have closed in order).
     */
    void onPeerFailed(PeerLink l, Exception cause, boolean wasConnected) {
        // a rank declared failed itself is cut off: what it sees of the others is no evidence against them
        boolean evidence = !closing && !l.peerSaidBye && wasConnected && !declaredFailed;
        int kind = cause instanceof PeerLink.ProtocolException ? Frame.FAIL_PROTOCOL
                : cause instanceof PeerLink.ReportedFailure rf ? rf.kind : Frame.FAIL_LOST;
        String why = (kind == Frame.FAIL_PROTOCOL ? "protocol error: " : "") + cause.getMessage();
        boolean fresh = evidence && markDead(l.peer, why);
        // the layer above first: a thread whose op fails below then finds its communicators DEGRADED already
        if (fresh) tellAbove(l.peer, why, kind);
        onPeerFailed(l, cause);
        if (fresh) tellPeers(l.peer, kind);
    }

    /** A peer's connection broke: fail every op that depended on it. */
    private void onPeerFailed(PeerLink l, Exception cause) {
        int p = l.peer;
        List<Request<?>> doomed = new ArrayList<>();
        matchLock.lock();
        try {
            failed[p] = true;
            failures++;
            for (MatchTable table : tables.values()) {
                for (Iterator<RecvRequest> it = table.posted.iterator(); it.hasNext(); ) {
                    RecvRequest r = it.next();
                    if (r.src == p || r.src == ANY) {
                        it.remove();
                        doomed.add(r);
                    }
                }
                table.unexpected.removeIf(u -> u.src == p && u.data == null && u.selfSend == null);
                for (Iterator<ProbeRequest> it = table.probes.iterator(); it.hasNext(); ) {
                    ProbeRequest pr = it.next();
                    if (pr.src == p || pr.src == ANY) {
                        it.remove();
                        doomed.add(pr);
                    }
                }
            }
        } finally {
            matchLock.unlock();
        }
        doomed.addAll(l.drainQueued());
        if (l.payloadRecv() != null) doomed.add(l.payloadRecv());
        doomed.addAll(l.awaitingCts.values());
        l.awaitingCts.clear();
        doomed.addAll(l.awaitingData.values());
        l.awaitingData.clear();
        doomed.addAll(l.awaitingDone.values());
        l.awaitingDone.clear();
        for (Request<?> r : doomed) {
            if (closing) r.fail(new CommAbortedException("rank " + rank + ": " + r.describe() + " failed: the session is closed"));
            else r.fail(peerFailed(p, r.describe(), cause));
        }
    }

    private PeerFailedException peerFailed(int peer, String what, Throwable cause) {
        PeerLink l = links[peer];
        String reason;
        matchLock.lock();
        try {
            reason = deadWhy[peer];
        } finally {
            matchLock.unlock();
        }
        String why = l.peerSaidBye ? "rank " + peer + " closed its session"
                : reason != null ? "rank " + peer + " failed (" + reason + ")" : "rank " + peer + " failed (connection lost)";
        return new PeerFailedException("rank " + rank + ": " + what + ": " + why, List.of(peer), cause);
    }

    // ------------------------------------------------------------------------------------------ failures

    /**
     * Records that world rank {@code p} failed ({@code kind}: a {@link Frame} FAIL_ constant): once per rank, tells
     * every connected peer (they forward it in turn), re-opens the ring of neighbour connections past it, and tells the
     * layer above. Not for ranks that closed in order.
     */
    private void noteDead(int p, String why, int kind) {
        if (markDead(p, why)) announceDead(p, why, kind);
    }

    /** Records the failure of {@code p}; true if it was not known. */
    private boolean markDead(int p, String why) {
        matchLock.lock();
        try {
            if (dead[p] || closing) return false;
            dead[p] = true;
            deadWhy[p] = why;
            return true;
        } finally {
            matchLock.unlock();
        }
    }

    /** Tells the layer above and the connected peers that {@code p} failed (once, after {@link #markDead}). */
    private void announceDead(int p, String why, int kind) {
        tellAbove(p, why, kind);
        tellPeers(p, kind);
    }

    /** Tells the layer above that {@code p} failed (its communicators turn DEGRADED, their running collectives fail). */
    private void tellAbove(int p, String why, int kind) {
        // a broken connection or a protocol error was logged by the link already
        if (kind == Frame.FAIL_SILENT || kind == Frame.FAIL_REPORTED) LOG.warn("rank {}: rank {} failed: {}", rank, p, why);
        try {
            events.peerFailed(p, why);
        } catch (RuntimeException e) {
            LOG.warn("rank {}: failure listener threw", rank, e);
        }
    }

    /** Tells every connected peer that {@code p} failed (they forward it), and re-opens the neighbour ring past it. */
    private void tellPeers(int p, int kind) {
        if (!declaredFailed) {
            int forward = kind == Frame.FAIL_REPORTED ? Frame.FAIL_REPORTED : kind;
            for (PeerLink q : links) {
                // a link being re-established keeps the notice in its resend log
                PeerLink.State qs = q.state;
                if (q.peer != p && (qs == PeerLink.State.CONNECTED || qs == PeerLink.State.RECONNECTING)) {
                    q.sendFrame(Frame.FAILED, forward, 0, p, 0, 0, null, null);
                }
            }
            connectNeighbour();
        }
    }

    /** Fails the link to {@code p} whatever its state (connected or not) with {@code cause}. */
    private void failLink(int p, PeerLink.ReportedFailure cause) {
        PeerLink l = links[p];
        boolean idle;
        synchronized (l) {
            idle = l.state == PeerLink.State.IDLE || l.state == PeerLink.State.CONNECTING;
            if (idle) {
                l.state = PeerLink.State.FAILED;
                l.notifyAll();
            }
        }
        if (idle) onPeerFailed(l, cause, false);
        else l.fail(cause);
    }

    /** The watchdog heard nothing from the connected peer of {@code l} for {@code silentNanos}: it failed. */
    void onSilent(PeerLink l, long silentNanos) {
        if (closing || l.state != PeerLink.State.CONNECTED) return;
        String why = "nothing came from it for " + silentNanos / 1_000_000 + " ms (HCOMM_HEARTBEAT_TIMEOUT "
                + heartbeatTimeoutNanos / 1_000_000 + " ms)";
        PeerLink.ReportedFailure silence = new PeerLink.ReportedFailure(why, Frame.FAIL_SILENT);
        if (l.mayReconnect(silence)) {
            // maybe only this connection is stuck (a link that went down and up, a lost route): replace it (the watchdog
            // suspects a reliable link after half the timeout); a peer that has not answered a new connection by the
            // time its silence reaches the heartbeat timeout is declared failed then, so detection stays within it
            // (less one shortest attempt: the attempt running at that moment may take that long to end)
            l.giveUpAt = System.nanoTime() + Math.max(MIN_ATTEMPT_NANOS, heartbeatTimeoutNanos - silentNanos - MIN_ATTEMPT_NANOS);
            l.lost(silence);
            return;
        }
        // the peer reads this if it ever runs again, and knows it was left out
        l.sendFrame(Frame.FAILED, Frame.FAIL_SILENT, 0, l.peer, 0, 0, null, null);
        noteDead(l.peer, why, Frame.FAIL_SILENT);
        l.fail(new PeerLink.ReportedFailure(why, Frame.FAIL_SILENT));
    }

    /** A FAILED notice from the peer of {@code from}: rank {@code p} failed, or (p == this rank) we were declared failed. */
    void onFailedNotice(PeerLink from, int p, int flags) {
        if (closing) return;
        if (p == rank) {
            declaredFailedBy(from.peer, "rank " + from.peer + " declared this rank failed: " + Frame.failReason(flags));
            return;
        }
        if (p == from.peer) return; // nobody reports itself
        boolean known;
        matchLock.lock();
        try {
            known = dead[p];
        } finally {
            matchLock.unlock();
        }
        if (known) return;
        String why = "rank " + from.peer + " reports it failed: " + Frame.failReason(flags);
        noteDead(p, why, Frame.FAIL_REPORTED);
        failLink(p, new PeerLink.ReportedFailure(why, Frame.FAIL_REPORTED));
    }

    /** Another rank declared this one failed: it stops forwarding and reconnecting, its communicators become FAILED. */
    private void declaredFailedBy(int by, String why) {
        if (declaredFailed) return;
        declaredFailed = true;
        LOG.error("rank {}: {}; its communicators are unusable", rank, why);
        try {
            events.declaredFailed(by, why);
        } catch (RuntimeException e) {
            LOG.warn("rank {}: failure listener threw", rank, e);
        }
    }

    /** Whether another rank declared this one failed. */
    boolean isDeclaredFailed() {
        return declaredFailed;
    }

    /** Whether world rank {@code p} is known to have failed. */
    boolean isDead(int p) {
        matchLock.lock();
        try {
            return dead[p];
        } finally {
            matchLock.unlock();
        }
    }

    void onAbortNotice(PeerLink from, long commId) {
        if (closing) return;
        try {
            events.abortNotice(commId, from.peer);
        } catch (RuntimeException e) {
            LOG.warn("rank {}: abort listener threw", rank, e);
        }
    }

    void onStatusRequest(PeerLink from) {
        try {
            events.statusRequested(from.peer);
        } catch (RuntimeException e) {
            LOG.warn("rank {}: status listener threw", rank, e);
        }
    }

    /** World ranks known to have failed (not those that closed in order), ascending. */
    public List<Integer> failedRanks() {
        List<Integer> out = new ArrayList<>();
        matchLock.lock();
        try {
            for (int p = 0; p < size; p++) if (dead[p]) out.add(p);
        } finally {
            matchLock.unlock();
        }
        return out;
    }

    /** Why world rank {@code p} is known to have failed, or null. */
    public String failureReason(int p) {
        matchLock.lock();
        try {
            return deadWhy[p];
        } finally {
            matchLock.unlock();
        }
    }

    private static long baseId(long commId) {
        return commId & ~(3L << 62);
    }

    /**
     * Aborts communicator {@code commId} here: every pending op on any of its channels (user, collective, notice,
     * check) fails with {@code error.get()} (a receive that is taking data has it discarded), and later messages for it
     * are dropped on arrival (eager ones read and dropped, rendezvous ones refused).
     */
    public void failCommunicator(long commId, java.util.function.Supplier<? extends RuntimeException> error) {
        long base = baseId(commId);
        deadComms.add(base);
        List<Request<?>> doomed = new ArrayList<>();
        List<Runnable> refusals = new ArrayList<>();
        matchLock.lock();
        try {
            for (long k = 0; k < 4; k++) {
                MatchTable table = tables.get(base | (k << 62));
                if (table == null) continue;
                doomed.addAll(table.posted);
                table.posted.clear();
                doomed.addAll(table.probes);
                table.probes.clear();
                table.watches.clear();
                for (Unexpected u : table.unexpected) {
                    if (u.selfSend != null) doomed.add(u.selfSend);
                    else if (u.data != null) releaseUnexpected(u);
                    else refusals.add(refuseRendezvous(u));
                }
                table.unexpected.clear();
            }
        } finally {
            matchLock.unlock();
        }
        for (PeerLink l : links) {
            // left in their maps: a CTS that comes later finds the send done (the receiver is told), DATA is discarded
            for (SendRequest sr : l.awaitingCts.values()) if (baseId(sr.commId) == base) doomed.add(sr);
            for (RecvRequest rr : l.awaitingData.values()) if (baseId(rr.commId) == base) doomed.add(rr);
            l.queuedRequests(sr -> baseId(sr.commId) == base, doomed);
            for (SendRequest sr : l.awaitingDone.values()) if (baseId(sr.commId) == base) doomed.add(sr);
        }
        for (Runnable r : refusals) r.run();
        for (Request<?> r : doomed) r.fail(error.get());
    }

    /**
     * Tells every rank of {@code worldRanks} (but this one and failed ones) that communicator {@code commId} was aborted:
     * at once to connected peers, through a new connection (opened in the background) to the others. Returns at once.
     */
    public void sendAbort(long commId, int[] worldRanks) {
        for (int p : worldRanks) {
            if (p == rank) continue;
            PeerLink l = links[p];
            if (l.state == PeerLink.State.CONNECTED && l.sendFrame(Frame.ABORT, 0, commId, rank, 0, 0, null, null)) continue;
            if (l.state == PeerLink.State.FAILED || l.state == PeerLink.State.CLOSED || closing) continue;
            Thread.ofVirtual().name("hcomm-connect-" + rank).start(() -> {
                try {
                    PeerLink c = linkTo(p, System.nanoTime() + Math.min(connectTimeout.toNanos(), 10_000_000_000L));
                    c.sendFrame(Frame.ABORT, 0, commId, rank, 0, 0, null, null);
                } catch (HcommException e) {
                    LOG.debug("rank {}: could not tell rank {} of the abort: {}", rank, p, e.getMessage());
                }
            });
        }
    }

    /** Asks the connected peer {@code p} to publish its state (an op of ours is stuck waiting for it). */
    public void requestStatus(int p) {
        if (p == rank || p < 0 || p >= size) return;
        PeerLink l = links[p];
        if (l.state == PeerLink.State.CONNECTED) l.sendFrame(Frame.STATUS_REQUEST, 0, 0, 0, 0, 0, null, null);
    }

    /**
     * A point-to-point op (user channel) that has waited at least {@code thresholdNanos}, as the watchdog sees it.
     *
     * @param commId    communicator id
     * @param kind      {@code send}, {@code recv} or {@code probe}
     * @param peer      world rank it waits for, or {@link #ANY}
     * @param waited    nanoseconds since the watchdog first saw it pending
     * @param firstTime true the first time it is returned
     */
    public record PendingOp(long commId, String kind, int peer, int tag, long bytes, long waited, boolean firstTime,
                            String description) {
    }

    /**
     * Point-to-point ops on user channels (collectives are tracked above) that have been pending for at least
     * {@code thresholdNanos}. The time is counted from the first call of this method that saw the op (the watchdog
     * calls it every tick), so ops cost nothing for this until they wait.
     */
    public List<PendingOp> pendingOps(long now, long thresholdNanos) {
        List<Request<?>> all = new ArrayList<>();
        matchLock.lock();
        try {
            for (Map.Entry<Long, MatchTable> e : tables.entrySet()) {
                if ((e.getKey() >>> 62) != 0) continue;
                all.addAll(e.getValue().posted);
                all.addAll(e.getValue().probes);
            }
        } finally {
            matchLock.unlock();
        }
        for (PeerLink l : links) {
            for (SendRequest sr : l.awaitingCts.values()) if ((sr.commId >>> 62) == 0) all.add(sr);
            for (RecvRequest rr : l.awaitingData.values()) if ((rr.commId >>> 62) == 0) all.add(rr);
            l.queuedRequests(sr -> (sr.commId >>> 62) == 0, all);
        }
        List<PendingOp> out = null;
        for (Request<?> r : all) {
            if (r.finished()) continue;
            if (r.seenAt == 0) {
                r.seenAt = now == 0 ? 1 : now;
                continue;
            }
            long waited = now - r.seenAt;
            if (waited < thresholdNanos) continue;
            boolean first = !r.reported;
            r.reported = true;
            if (out == null) out = new ArrayList<>();
            out.add(switch (r) {
                case SendRequest sr -> new PendingOp(sr.commId, "send", sr.dst, sr.tag, sr.size, waited, first, sr.describe());
                case RecvRequest rr -> new PendingOp(rr.commId, "recv", rr.src, rr.tag, rr.buf.byteSize(), waited, first, rr.describe());
                case ProbeRequest pr -> new PendingOp(pr.commId, "probe", pr.src, pr.tag, 0, waited, first, pr.describe());
            });
        }
        return out == null ? List.of() : out;
    }

    private MatchTable table(long commId) {
        return tables.computeIfAbsent(commId, id -> new MatchTable());
    }

    // ------------------------------------------------------------------------------------- connections

    private PeerLink linkTo(int peer, long deadline) {
        PeerLink l = links[peer];
        if (l.state == PeerLink.State.CONNECTED) return l;
        synchronized (l) {
            while (l.state != PeerLink.State.IDLE) {
                switch (l.state) {
                    case CONNECTED, RECONNECTING -> { return l; }
                    case FAILED, CLOSED -> throw peerFailed(peer, "connect to rank " + peer, null);
                    default -> waitOn(l, deadline, peer);
                }
            }
            l.state = PeerLink.State.CONNECTING;
        }
        // network I/O outside the monitor: the acceptor may need it to settle a simultaneous connect
        try {
            connect(l, deadline);
            return l;
        } catch (HcommException e) {
            boolean mine;
            synchronized (l) {
                mine = l.state == PeerLink.State.CONNECTING;
                if (mine) {
                    l.state = PeerLink.State.FAILED;
                    l.notifyAll();
                }
            }
            if (mine && !closing) onPeerFailed(l, e, false);
            throw e;
        }
    }

    /**
     * Opens the connection to a peer we wait for but have not talked to yet, so that its death is noticed
     * (connection refused or EOF) instead of waiting out the timeout.
     */
    private void connectInBackground(int peer) {
        Thread.ofVirtual().name("hcomm-connect-" + rank).start(() -> {
            try {
                linkTo(peer, System.nanoTime() + connectTimeout.toNanos());
            } catch (HcommException e) {
                LOG.debug("rank {}: background connect to rank {} failed: {}", rank, peer, e.getMessage());
            }
        });
    }

    private void waitOn(PeerLink l, long deadline, int peer) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": connecting to rank " + peer + " timed out");
        }
        try {
            l.wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HcommException("rank " + rank + ": interrupted while connecting to rank " + peer, e);
        }
    }

    /**
     * Connects to {@code l.peer} (state CONNECTING, monitor not held); returns once CONNECTED or throws. To a peer of
     * this host it offers a pair of shared-memory rings (a file it creates and names in the hello); whatever the
     * answer, the file is unlinked before this returns (the peer has mapped it, or will not).
     */
    private void connect(PeerLink l, long deadline) {
        ShmOptions so = shm;
        ShmConduit.Mapping offer = ringOffer(l.peer);
        boolean[] used = new boolean[1];
        try {
            connect(l, deadline, offer, used);
        } finally {
            dropOffer(so, offer, used[0]);
        }
    }

    /** A ring file to offer {@code peer} if it shares this host and shared memory is on, else null (TCP). */
    private ShmConduit.Mapping ringOffer(int peer) {
        ShmOptions so = shm;
        if (so == null || !so.sameHost().test(peer)) return null;
        try {
            return ShmConduit.create(so.dir(), rank, peer, jobToken, so.ringBytes());
        } catch (IOException | RuntimeException e) {
            LOG.warn("rank {}: cannot create a shared-memory ring file for rank {} in {} ({}); using TCP to it", rank, peer,
                    so.dir(), e.toString());
            return null;
        }
    }

    /** The offered ring file goes from the directory (the peer has mapped it, or will not); unmapped unless in use. */
    private static void dropOffer(ShmOptions so, ShmConduit.Mapping offer, boolean used) {
        if (offer == null) return;
        ShmConduit.unlink(so.dir(), offer.name());
        if (!used) offer.unmap();
    }

    /**
     * Writes the hello (blocking channel): this rank, the peer, the world size, the job token, our eager limit, the ring
     * file offered (or none), whether we resend, the connection it replaces (0: none) and the last frame received.
     */
    private void writeHello(SocketChannel ch, int peer, byte[] offerName, long epoch, long resume) throws IOException {
        ByteBuffer hello = ByteBuffer.allocate(HELLO_BYTES + HELLO_EXT_BYTES + offerName.length + HELLO_RESUME_BYTES)
                .putInt(HELLO_MAGIC).putInt(rank).putInt(peer).putInt(size).putLong(jobToken + incarnations[rank]).putLong(unexpectedLimit)
                .putInt(offerName.length == 0 ? 0 : SHM_OFFER).putShort((short) offerName.length).put(offerName)
                .putInt(retryMax > 0 ? HELLO_RELIABLE : 0).putLong(epoch).putLong(resume).flip();
        while (hello.hasRemaining()) ch.write(hello);
    }

    /** The answer to a hello: ACCEPT (with the acceptor's settings and where it resumes), REJECT or GONE. */
    private record Answer(byte code, long peerLimit, String peerPrefix, boolean reliable, long epoch, long resume) {
    }

    private static Answer readAnswer(SocketChannel ch, int peer) throws IOException {
        var in = ch.socket().getInputStream();
        int b = in.read();
        if (b == REJECT || b == GONE) return new Answer((byte) b, 0, null, false, 0, 0);
        if (b != ACCEPT) throw new IOException("rank " + peer + " closed the connection during the hello");
        byte[] lim = in.readNBytes(8);
        if (lim.length < 8) throw new IOException("rank " + peer + " closed the connection during the hello");
        long peerLimit = ByteBuffer.wrap(lim).getLong();
        if (peerLimit < 0) throw new IOException("rank " + peer + " announced a negative eager limit");
        int shmAnswer = in.read();
        String peerPrefix = null;
        if (shmAnswer == SHM_OFFER) {
            byte[] len = in.readNBytes(2);
            int n = len.length < 2 ? -1 : ByteBuffer.wrap(len).getShort() & 0xffff;
            if (n < 1 || n > MAX_SHM_NAME) throw new IOException("rank " + peer + " sent a bad hello answer");
            byte[] p = in.readNBytes(n);
            if (p.length < n) throw new IOException("rank " + peer + " closed the connection during the hello");
            peerPrefix = new String(p, StandardCharsets.US_ASCII);
        } else if (shmAnswer != 0) {
            throw new IOException("rank " + peer + " closed the connection during the hello");
        }
        byte[] tail = in.readNBytes(HELLO_RESUME_BYTES);
        if (tail.length < HELLO_RESUME_BYTES) throw new IOException("rank " + peer + " closed the connection during the hello");
        ByteBuffer t = ByteBuffer.wrap(tail);
        int flags = t.getInt();
        long epoch = t.getLong();
        long resume = t.getLong();
        if ((flags & ~HELLO_RELIABLE) != 0 || epoch < 0 || resume < 0) throw new IOException("rank " + peer + " sent a bad hello answer");
        return new Answer(ACCEPT, peerLimit, peerPrefix, (flags & HELLO_RELIABLE) != 0, epoch, resume);
    }

    /** Accepts a hello (blocking channel): our eager limit, our file-name prefix if we mapped the offered rings, our resend flag, the connection's number and where we resume. */
    private void writeAccept(SocketChannel ch, boolean mapped, long epoch, long resume) throws IOException {
        byte[] me = mapped ? SharedFiles.ownPrefix().getBytes(StandardCharsets.US_ASCII) : new byte[0];
        ByteBuffer reply = ByteBuffer.allocate(10 + (mapped ? 2 + me.length : 0) + HELLO_RESUME_BYTES).put(ACCEPT)
                .putLong(unexpectedLimit).put((byte) (mapped ? SHM_OFFER : 0));
        if (mapped) reply.putShort((short) me.length).put(me);
        reply.putInt(retryMax > 0 ? HELLO_RELIABLE : 0).putLong(epoch).putLong(resume).flip();
        while (reply.hasRemaining()) ch.write(reply);
    }

    private void connect(PeerLink l, long deadline, ShmConduit.Mapping offer, boolean[] used) {
        int peer = l.peer;
        InetSocketAddress addr = addressBook.apply(peer);
        byte[] offerName = offer == null ? new byte[0] : offer.name().getBytes(StandardCharsets.US_ASCII);
        IOException last = null;
        long backoff = 10;
        long connectDeadline = Math.min(deadline, System.nanoTime() + connectTimeout.toNanos());
        // stops early if the peer is declared failed meanwhile (another rank reported it)
        while (System.nanoTime() < connectDeadline && !closing && l.state == PeerLink.State.CONNECTING) {
            SocketChannel ch = null;
            try {
                ch = SocketChannel.open();
                ch.socket().connect(addr, (int) Math.max(1, Math.min(10_000, (connectDeadline - System.nanoTime()) / 1_000_000)));
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                auth.connect(ch, Auth.DATA, Duration.ofSeconds(10));
                writeHello(ch, peer, offerName, 0, 0);
                ch.socket().setSoTimeout(10_000);
                Answer a = readAnswer(ch, peer);
                if (a.code() == ACCEPT) {
                    if (offer != null && a.peerPrefix() == null) {
                        LOG.warn("rank {}: rank {} did not map the shared-memory rings offered to it; using TCP to it", rank, peer);
                    }
                    Conduit conduit = offer != null && a.peerPrefix() != null
                            ? ShmConduit.of(l, progress, ch, offer, true, shm.dir(), a.peerPrefix())
                            : new SocketConduit(ch, l, progress);
                    synchronized (l) {
                        if (l.state == PeerLink.State.FAILED || l.state == PeerLink.State.CLOSED) {
                            // failed (reported by another rank) or closed while we connected
                            discard(conduit);
                            throw peerFailed(peer, "connect to rank " + peer, null);
                        }
                        l.install(conduit, a.peerLimit(), reliable(conduit, a.reliable()));
                        used[0] = conduit instanceof ShmConduit;
                    }
                    return;
                }
                ch.close();
                if (a.code() == REJECT) {
                    // both sides connected at once and the peer (lower rank) keeps its own attempt: wait for it
                    synchronized (l) {
                        while (l.state == PeerLink.State.CONNECTING) waitOn(l, deadline, peer);
                        if (l.state == PeerLink.State.CONNECTED) return;
                    }
                }
                throw peerFailed(peer, "connect to rank " + peer, null);
            } catch (Auth.AuthException e) {
                closeQuietly(ch);
                throw new HcommException("rank " + rank + ": rank " + peer + " at " + addr + " failed authentication: "
                        + e.getMessage() + " (do all ranks share HCOMM_SECRET?)", e);
            } catch (IOException e) {
                closeQuietly(ch);
                last = e;
            }
            synchronized (l) {
                if (l.state == PeerLink.State.CONNECTED) return;
                try {
                    l.wait(backoff);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
                if (l.state == PeerLink.State.CONNECTED) return;
            }
            backoff = Math.min(500, backoff * 2);
        }
        if (l.state == PeerLink.State.CONNECTED) return; // the peer's connection was accepted meanwhile
        if (l.state == PeerLink.State.FAILED) throw peerFailed(peer, "connect to rank " + peer, last);
        throw new PeerFailedException("rank " + rank + ": cannot connect to rank " + peer + " at " + addr + ": "
                + (last == null ? "closing" : last.getMessage()), List.of(peer), last);
    }

    // ------------------------------------------------------------------------------------- reconnecting

    /** How one reconnect attempt ended. */
    private enum Attempt { INSTALLED, REJECTED, GONE, SUPERSEDED }

    /**
     * Starts re-establishing the connection of {@code l} (state RECONNECTING) on a virtual thread
     * ({@code hcomm-reconnect-<rank>}), unless one does already: one per link, for as long as it is RECONNECTING.
     */
    void reconnect(PeerLink l) {
        synchronized (l) {
            if (l.recovering || l.state != PeerLink.State.RECONNECTING || linksClosing) return;
            l.recovering = true;
        }
        Thread.ofVirtual().name("hcomm-reconnect-" + rank).start(() -> {
            boolean clean = false;
            try {
                reconnectLoop(l);
                clean = true;
            } catch (RuntimeException e) {
                LOG.warn("rank {}: re-establishing the connection to rank {} failed unexpectedly", rank, l.peer, e);
                l.fail(new IOException("re-establishing the connection failed: " + e, e));
            } finally {
                if (!clean) {
                    synchronized (l) {
                        l.recovering = false;
                    }
                }
            }
        });
    }

    /**
     * Attempts to re-establish the connection: the first at once, each in a window twice as long as the one before
     * (from HCOMM_RETRY_INTERVAL, at most 8 times it), the next one when the window ends; gives up after retryMax
     * attempts (the peer is declared failed) or at once when the connection is refused (nothing listens at the peer's
     * address any more: its process is gone) or the peer declared this rank failed. Ends when the link is no longer
     * RECONNECTING (an attempt of either side succeeded); a new loss starts the count again. Clears
     * {@code l.recovering} in the same critical section that decides to stop.
     */
    private void reconnectLoop(PeerLink l) {
        long incident = 0;
        int attempt = 0;
        long window = retryIntervalNanos;
        Exception last = null;
        // a link lost to silence must be back before the silence reaches the heartbeat timeout
        boolean silent = false;
        long giveUpAt = 0;
        boolean outOfTime = false;
        while (true) {
            synchronized (l) {
                if (l.state != PeerLink.State.RECONNECTING || linksClosing) {
                    l.recovering = false;
                    return;
                }
                if (l.lostAt != incident) {
                    incident = l.lostAt;
                    attempt = 0;
                    window = retryIntervalNanos;
                    last = null;
                    silent = l.lossCause instanceof PeerLink.ReportedFailure rf && rf.kind == Frame.FAIL_SILENT && l.giveUpAt != 0;
                    giveUpAt = l.giveUpAt;
                }
                if (attempt >= retryMax) break;
                if (silent && attempt > 0 && System.nanoTime() - giveUpAt >= 0) {
                    outOfTime = true;
                    break;
                }
                attempt++;
                l.attempting = true;
            }
            long start = System.nanoTime();
            long end = silent && giveUpAt - (start + window) < 0 ? giveUpAt : start + window;
            Attempt outcome = Attempt.REJECTED;
            IOException refused = null;
            try {
                progress.withToken(l::detachRx);
                outcome = reconnectAttempt(l, Math.max(end, start + MIN_ATTEMPT_NANOS));
            } catch (IOException e) {
                last = e;
                if (isRefused(e)) refused = e;
            } finally {
                synchronized (l) {
                    l.attempting = false;
                    l.notifyAll();
                }
            }
            if (refused != null) {
                long stall = heartbeats() ? watchdog.recentStall(System.nanoTime(), Math.max(5_000_000_000L, 2 * heartbeatTimeoutNanos)) : 0;
                if (stall >= heartbeatTimeoutNanos && stall > 0) {
                    // this process could not run for longer than the heartbeat timeout (stopped, frozen): the peers took it
                    // for failed, gave up on it, and this one is gone (ended) since; the rank was left out, not the peer
                    String why = "this rank could not run for " + stall / 1_000_000 + " ms (longer than HCOMM_HEARTBEAT_TIMEOUT "
                            + heartbeatTimeoutNanos / 1_000_000 + " ms), and rank " + l.peer + " no longer takes connections ("
                            + refused.getMessage() + "): the others have declared this rank failed";
                    declaredFailedBy(l.peer, why);
                    l.fail(new PeerLink.ReportedFailure(why, Frame.FAIL_REPORTED));
                } else {
                    // no listener at the peer's address: its process is gone (or it closed its session)
                    l.fail(new IOException("its connection broke (" + describe(l.lossCause) + ") and reconnecting was refused ("
                            + refused.getMessage() + "): its process is gone", refused));
                }
                finishLoop(l);
                return;
            }
            if (outcome == Attempt.INSTALLED) {
                long ms = (System.nanoTime() - incident) / 1_000_000;
                LOG.info("rank {}: re-established the connection to rank {} after {} ms ({} attempt{}, connection {}); "
                        + "{} frames ({} bytes) sent again", rank, l.peer, ms, attempt, attempt == 1 ? "" : "s", l.epoch,
                        l.lastResent, l.lastResentBytes);
                continue;
            }
            if (outcome == Attempt.GONE) {
                declaredFailedBy(l.peer, "rank " + l.peer + " declared this rank failed (it refused to reconnect with it)");
                l.fail(new PeerLink.ReportedFailure("rank " + l.peer + " declared this rank failed", Frame.FAIL_REPORTED));
                finishLoop(l);
                return;
            }
            if (outcome == Attempt.REJECTED && last == null) last = new IOException("the attempt was turned down (rank " + l.peer + " keeps its own)");
            // wait for the end of the window, or until the link changes (the peer's attempt was accepted here)
            synchronized (l) {
                long left;
                while (l.state == PeerLink.State.RECONNECTING && l.lostAt == incident && !linksClosing
                        && (left = end - System.nanoTime()) > 0) {
                    try {
                        l.wait(Math.max(1, left / 1_000_000));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
            }
            window = Math.min(window * 2, 8 * retryIntervalNanos);
        }
        long ms = (System.nanoTime() - incident) / 1_000_000;
        int kind = l.lossCause instanceof PeerLink.ReportedFailure rf ? rf.kind : Frame.FAIL_LOST;
        String why = describe(l.lossCause) + "; " + attempt + " attempt" + (attempt == 1 ? "" : "s") + " to reconnect in "
                + ms + " ms failed (" + (outOfTime ? "no answer before the silence reached HCOMM_HEARTBEAT_TIMEOUT"
                : "HCOMM_RETRY_MAX " + retryMax) + ", last: " + describe(last) + ")";
        // a silent peer is logged when announced, a lost connection by the link
        l.fail(kind == Frame.FAIL_SILENT ? new PeerLink.ReportedFailure(why, kind) : new IOException(why));
        finishLoop(l);
    }

    /** A connect that was refused (ECONNREFUSED: nothing listens at the address), not one that timed out or found no route. */
    private static boolean isRefused(IOException e) {
        return e instanceof java.net.ConnectException && e.getMessage() != null && e.getMessage().contains("refused");
    }

    private static void finishLoop(PeerLink l) {
        synchronized (l) {
            l.recovering = false;
        }
    }

    private static String describe(Exception e) {
        if (e == null) return "none";
        if (e instanceof PeerLink.ReportedFailure) return e.getMessage();
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    /** One reconnect attempt: connect, handshake, hello, and if accepted install the new connection; by {@code end}. */
    private Attempt reconnectAttempt(PeerLink l, long end) throws IOException {
        ShmOptions so = shm;
        ShmConduit.Mapping offer = ringOffer(l.peer);
        boolean[] used = new boolean[1];
        try {
            return reconnectAttempt(l, end, offer, used);
        } finally {
            dropOffer(so, offer, used[0]);
        }
    }

    private Attempt reconnectAttempt(PeerLink l, long end, ShmConduit.Mapping offer, boolean[] used) throws IOException {
        int peer = l.peer;
        InetSocketAddress addr = addressBook.apply(peer);
        byte[] offerName = offer == null ? new byte[0] : offer.name().getBytes(StandardCharsets.US_ASCII);
        long resume = l.rxDone();
        long epoch;
        synchronized (l) {
            epoch = l.epoch;
        }
        SocketChannel ch = SocketChannel.open();
        l.attemptChannel = ch;
        boolean keep = false;
        try {
            if (linksClosing || l.state != PeerLink.State.RECONNECTING) return Attempt.SUPERSEDED;
            if (unreachable) throw new java.net.NoRouteToHostException("no route to " + addr + " (test hook)");
            ch.socket().connect(addr, millisLeft(end));
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            auth.connect(ch, Auth.DATA, Duration.ofMillis(millisLeft(end)));
            writeHello(ch, peer, offerName, epoch, resume);
            ch.socket().setSoTimeout(millisLeft(end));
            Answer a = readAnswer(ch, peer);
            if (a.code() == REJECT) return Attempt.REJECTED;
            if (a.code() == GONE) return Attempt.GONE;
            if (!a.reliable()) throw new IOException("rank " + peer + " accepted a reconnect but does not resend");
            Conduit conduit = offer != null && a.peerPrefix() != null
                    ? ShmConduit.of(l, progress, ch, offer, true, shm.dir(), a.peerPrefix())
                    : new SocketConduit(ch, l, progress);
            used[0] = conduit instanceof ShmConduit;
            Object[] result = new Object[1];
            progress.withToken(() -> {
                synchronized (l) {
                    // the receive side must not have moved since the hello said where to resume
                    if (linksClosing || l.state != PeerLink.State.RECONNECTING || l.rxDone() != resume) return;
                    try {
                        result[0] = l.installResumed(conduit, a.epoch(), a.resume());
                    } catch (IOException e) {
                        result[0] = e;
                    }
                }
            });
            if (result[0] instanceof List<?> done) {
                keep = true;
                for (Object s : done) ((SendRequest) s).succeed(null);
                return Attempt.INSTALLED;
            }
            discard(conduit);
            if (result[0] instanceof PeerLink.ProtocolException pe) {
                LOG.warn("rank {}: cannot resume the connection to rank {}: {}", rank, peer, pe.getMessage());
                l.fail(pe);
            }
            return Attempt.SUPERSEDED;
        } finally {
            l.attemptChannel = null;
            if (!keep) closeQuietly(ch);
        }
    }

    private static int millisLeft(long end) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (end - System.nanoTime()) / 1_000_000));
    }

    /** Waits until no link is RECONNECTING any more (reconnected or failed), or until {@code deadline}. */
    private void awaitReconnecting(long deadline) {
        for (PeerLink l : links) {
            synchronized (l) {
                long left;
                while (l.state == PeerLink.State.RECONNECTING && (left = deadline - System.nanoTime()) > 0) {
                    try {
                        l.wait(Math.max(1, left / 1_000_000));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        }
    }

    /** The longest a lost connection is being re-established before its peer is declared failed: the sum of the attempt windows. */
    long retryBudgetNanos() {
        long sum = 0, window = retryIntervalNanos;
        for (int k = 0; k < retryMax; k++) {
            sum += Math.max(window, MIN_ATTEMPT_NANOS);
            window = Math.min(window * 2, 8 * retryIntervalNanos);
        }
        return sum;
    }

    /**
     * Closes a lost, replaced or failed conduit (any thread). Shared-memory rings are unmapped later, where no thread can
     * be copying into them: when the link installs its next connection, or when the transport closes.
     */
    void retire(Conduit old) {
        if (old == null) return;
        try {
            old.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        if (old instanceof ShmConduit c && !c.released() && !retired.contains(c)) retired.add(c);
    }

    /** Closes a conduit that was never installed (nobody else has seen it), rings unmapped at once. */
    private static void discard(Conduit c) throws IOException {
        c.close();
        if (c instanceof ShmConduit sc) sc.release();
    }

    /** Unmaps the retired rings of {@code l} (progress token and {@code l}'s tx lock held: nobody touches them). */
    void releaseRetired(PeerLink l) {
        for (ShmConduit c : retired) {
            if (c.link != l || l.ch == c) continue;
            c.release();
            if (c.released()) retired.remove(c);
        }
    }

    /**
     * Whether a reconnect from {@code src} that replaces its connection {@code helloEpoch} is taken now (progress token
     * and monitor of {@code l} held): not from a rank declared failed (GONE); not one that started before the connection
     * we have now (its epoch is older); not while our own attempt runs and we are the lower rank (ours wins, as at the
     * first connect).
     */
    private byte reconnectVerdict(PeerLink l, int src, long helloEpoch, boolean peerReliable) {
        if (linksClosing || unreachable) return REJECT;
        return switch (l.state) {
            case FAILED -> isDead(src) ? GONE : REJECT;
            case CONNECTED -> l.reliable && peerReliable && helloEpoch >= l.epoch ? ACCEPT : REJECT;
            case RECONNECTING -> peerReliable && !(l.attempting && rank < src) ? ACCEPT : REJECT;
            default -> REJECT;
        };
    }

    // ------------------------------------------------------------------------------------------ accepting

    private void acceptLoop() {
        while (!linksClosing) {
            SocketChannel ch;
            try {
                ch = listener.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (!linksClosing) LOG.warn("rank {}: accept failed: {}", rank, e.toString());
                continue;
            }
            Thread.ofVirtual().name("hcomm-hello-" + rank).start(() -> handshake(ch));
        }
    }

    private void handshake(SocketChannel ch) {
        String from = "?";
        try {
            from = String.valueOf(ch.getRemoteAddress());
            auth.accept(ch, Auth.DATA, Duration.ofSeconds(10));
            ch.socket().setSoTimeout(10_000);
            var in = ch.socket().getInputStream();
            byte[] hb = in.readNBytes(HELLO_BYTES);
            if (hb.length < HELLO_BYTES) throw new IOException("short hello");
            ByteBuffer hello = ByteBuffer.wrap(hb);
            int magic = hello.getInt();
            int src = hello.getInt();
            int dst = hello.getInt();
            int peerSize = hello.getInt();
            long token = hello.getLong();
            long peerLimit = hello.getLong();
            if (magic != HELLO_MAGIC || peerLimit < 0 || dst != rank || peerSize != size || src < 0 || src >= size || src == rank
                    || token != jobToken + incarnations[src]) {
                throw new IOException("hello from a rank of another job or communicator (src " + src + ", dst " + dst
                        + ", size " + peerSize + ")");
            }
            byte[] ext = in.readNBytes(HELLO_EXT_BYTES);
            if (ext.length < HELLO_EXT_BYTES) throw new IOException("short hello");
            ByteBuffer e = ByteBuffer.wrap(ext);
            int offerFlag = e.getInt();
            int nameLen = e.getShort() & 0xffff;
            if (nameLen > MAX_SHM_NAME || (offerFlag == SHM_OFFER) != (nameLen > 0) || (offerFlag != 0 && offerFlag != SHM_OFFER)) {
                throw new IOException("bad hello extension");
            }
            byte[] nb = in.readNBytes(nameLen);
            if (nb.length < nameLen) throw new IOException("short hello");
            String ringFile = nameLen == 0 ? null : new String(nb, StandardCharsets.US_ASCII);
            byte[] tail = in.readNBytes(HELLO_RESUME_BYTES);
            if (tail.length < HELLO_RESUME_BYTES) throw new IOException("short hello");
            ByteBuffer r = ByteBuffer.wrap(tail);
            int flags = r.getInt();
            long epoch = r.getLong();
            long resume = r.getLong();
            if ((flags & ~HELLO_RELIABLE) != 0 || epoch < 0 || resume < 0) throw new IOException("bad hello resume part");
            boolean peerReliable = (flags & HELLO_RELIABLE) != 0;
            ShmOptions so = shm;
            ShmConduit.Mapping mapped = null;
            String peerPrefix = null;
            if (ringFile != null && so != null && so.sameHost().test(src)) {
                try {
                    peerPrefix = SharedFiles.ownerPrefix(ringFile);
                    if (peerPrefix == null) throw new IOException("'" + ringFile + "' is not a ring file name");
                    mapped = ShmConduit.attach(so.dir(), ringFile, src, rank, jobToken);
                } catch (IOException | RuntimeException ex) {
                    LOG.warn("rank {}: cannot map the shared-memory rings rank {} offered ({}); using TCP to it", rank, src, ex.toString());
                }
            }
            PeerLink l = links[src];
            boolean used = false;
            try {
                used = epoch == 0 ? acceptNew(ch, l, src, peerLimit, peerReliable, mapped, peerPrefix, so)
                        : acceptReconnect(ch, l, src, epoch, resume, peerReliable, mapped, peerPrefix, so);
            } finally {
                if (mapped != null && !used) mapped.unmap();
            }
        } catch (Auth.AuthException e) {
            LOG.warn("rank {}: refused a data connection from {}: {}", rank, from, e.getMessage());
            closeQuietly(ch);
        } catch (IOException e) {
            if (!closing) LOG.warn("rank {}: refused a data connection from {}: {}", rank, from, e.toString());
            closeQuietly(ch);
        }
    }

    /**
     * Whether a new link over {@code conduit} keeps a resend log and is re-established when dropped: with retries on
     * both sides, and only over TCP. Shared-memory rings lose nothing while both processes live, and the pair's
     * loopback socket (doorbell and death detector) ends only when a process does; so a link over shared memory has no
     * resend log (it costs the hot path: 8 B ping-pong 0.47-0.83 us with it, 0.41-0.48 us without) and a dropped one
     * means a failed peer. Both sides see the same conduit kind, so they agree.
     */
    private boolean reliable(Conduit conduit, boolean peerReliable) {
        return retryMax > 0 && peerReliable && !(conduit instanceof ShmConduit);
    }

    /** A first connection from {@code src}: taken unless ours is under way and we are the lower rank; true if the rings are used. */
    private boolean acceptNew(SocketChannel ch, PeerLink l, int src, long peerLimit, boolean peerReliable,
                              ShmConduit.Mapping mapped, String peerPrefix, ShmOptions so) throws IOException {
        synchronized (l) {
            boolean keepOurs = l.state == PeerLink.State.CONNECTING && rank < src;
            if (l.state == PeerLink.State.IDLE || (l.state == PeerLink.State.CONNECTING && !keepOurs)) {
                writeAccept(ch, mapped != null, 1, 0);
                Conduit conduit = mapped != null ? ShmConduit.of(l, progress, ch, mapped, false, so.dir(), peerPrefix)
                        : new SocketConduit(ch, l, progress);
                l.install(conduit, peerLimit, reliable(conduit, peerReliable));
                return mapped != null;
            }
            ch.write(ByteBuffer.wrap(new byte[] {REJECT}));
            ch.close();
            return false;
        }
    }

    /**
     * {@code src} re-establishes the connection that replaces its connection {@code helloEpoch} and has every frame of
     * ours up to {@code peerResume}. If taken ({@link #reconnectVerdict}), ours (if it still looked alive) is dropped,
     * the receive side rolled back, the answer says where we resume, and the new connection goes in with what the peer
     * lacks queued first; all under the progress token and the link's monitor. True if the rings are used.
     */
    private boolean acceptReconnect(SocketChannel ch, PeerLink l, int src, long helloEpoch, long peerResume, boolean peerReliable,
                                    ShmConduit.Mapping mapped, String peerPrefix, ShmOptions so) throws IOException {
        byte[] verdict = new byte[1];
        boolean[] used = new boolean[1];
        Object[] result = new Object[1];
        progress.withToken(() -> {
            synchronized (l) {
                Conduit conduit = null;
                try {
                    byte v = reconnectVerdict(l, src, helloEpoch, peerReliable);
                    if (v == ACCEPT && !l.canResumeFrom(peerResume)) {
                        // the hello was made before the peer received (and acknowledged) more: a late attempt, not ours to take
                        LOG.debug("rank {}: turned down a late reconnect from rank {} (resume point {})", rank, src, peerResume);
                        v = REJECT;
                    }
                    verdict[0] = v;
                    if (v != ACCEPT) {
                        ch.write(ByteBuffer.wrap(new byte[] {v}));
                        ch.close();
                        return;
                    }
                    if (l.state == PeerLink.State.CONNECTED) {
                        l.detach(new IOException("rank " + src + " re-established the connection (connection " + l.epoch + " broke on its side)"));
                    }
                    l.detachRx();
                    long newEpoch = Math.max(l.epoch, helloEpoch) + 1;
                    writeAccept(ch, mapped != null, newEpoch, l.rxDone());
                    conduit = mapped != null ? ShmConduit.of(l, progress, ch, mapped, false, so.dir(), peerPrefix)
                            : new SocketConduit(ch, l, progress);
                    used[0] = mapped != null;
                    result[0] = l.installResumed(conduit, newEpoch, peerResume);
                } catch (IOException e) {
                    result[0] = e;
                    if (conduit != null) retire(conduit);
                }
            }
        });
        if (result[0] instanceof List<?> done) {
            for (Object s : done) ((SendRequest) s).succeed(null);
            LOG.info("rank {}: rank {} re-established the connection (connection {}); {} frames ({} bytes) sent again", rank, src,
                    l.epoch, l.lastResent, l.lastResentBytes);
            return used[0];
        }
        if (result[0] instanceof PeerLink.ProtocolException pe) {
            closeQuietly(ch);
            LOG.warn("rank {}: cannot resume the connection to rank {}: {}", rank, src, pe.getMessage());
            l.fail(pe);
            return used[0];
        }
        if (result[0] instanceof IOException e) {
            // the answer did not get through: ours is gone too now, so this side re-establishes it as well
            closeQuietly(ch);
            reconnect(l);
            throw e;
        }
        if (verdict[0] == REJECT) LOG.debug("rank {}: turned down a reconnect from rank {} (state {})", rank, src, l.state);
        return used[0];
    }

    private static void closeQuietly(SocketChannel ch) {
        if (ch == null) return;
        try {
            ch.close();
        } catch (IOException ignored) {
            // nothing more to do
        }
    }

    // ------------------------------------------------------------------------------------------ closing

    /**
     * Closes in order: says BYE on every connection, flushes what is queued (bounded), then closes sockets,
     * stops the acceptor and the progress thread. Pending ops fail with {@link CommAbortedException}.
     */
    @Override
    public void close() {
        if (closing) return;
        // a link being re-established gets the retry budget to come back, so what was sent on it before close arrives
        awaitReconnecting(System.nanoTime() + Math.min(retryBudgetNanos() + 1_000_000_000L, 10_000_000_000L));
        closing = true;
        watchdog.close();
        for (PeerLink l : links) l.closeOrderly();
        // BYE said: wait (bounded) until everything is written and, on reliable links, acknowledged (the peer answers a BYE
        // with an ACK); a connection that drops meanwhile is still re-established (the listener is open until then)
        long deadline = System.nanoTime() + 2_000_000_000L;
        progress.pollUntil(() -> {
            for (PeerLink l : links) {
                PeerLink.State st = l.state;
                if (st == PeerLink.State.RECONNECTING || (st == PeerLink.State.CONNECTED && !l.delivered())) return false;
            }
            return true;
        }, deadline);
        linksClosing = true;
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        progress.withToken(() -> {
            for (PeerLink l : links) {
                l.markClosed();
                onPeerFailed(l, new ClosedChannelException());
            }
            // unmapped holding each link's tx lock too, so that no sender is copying into a ring
            for (ShmConduit c : retired) {
                c.link.txLock.lock();
                try {
                    c.release();
                } finally {
                    c.link.txLock.unlock();
                }
            }
            retired.clear();
        });
        List<Request<?>> doomed = new ArrayList<>();
        matchLock.lock();
        try {
            for (MatchTable table : tables.values()) {
                doomed.addAll(table.posted);
                table.posted.clear();
                doomed.addAll(table.probes);
                table.probes.clear();
                for (Unexpected u : table.unexpected) if (u.selfSend != null) doomed.add(u.selfSend);
                table.unexpected.clear();
            }
        } finally {
            matchLock.unlock();
        }
        for (Request<?> r : doomed) r.fail(new CommAbortedException("rank " + rank + ": " + r.describe() + " failed: the session is closed"));
        acceptor.interrupt();
        try {
            acceptor.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        progress.close();
    }

    // ------------------------------------------------------------------------------------ match tables

    /** A message that arrived before its receive: eager bytes, an RTS, or a send to self. */
    record Unexpected(long commId, int src, int tag, long size, byte[] data, long msgId, SendRequest selfSend, int flags) {
    }

    /** Per communicator: receives posted in order, and unexpected messages in order of arrival. */
    static final class MatchTable {
        final java.util.ArrayList<RecvRequest> posted = new java.util.ArrayList<>();
        final java.util.ArrayList<Unexpected> unexpected = new java.util.ArrayList<>();
        final java.util.ArrayList<ProbeRequest> probes = new java.util.ArrayList<>();

        final java.util.HashMap<Integer, Watch> watches = new java.util.HashMap<>();

        /** Queues an unexpected message; returns the waiting probes it satisfies (removed), or null. */
        List<ProbeRequest> addUnexpected(Unexpected u) {
            unexpected.add(u);
            if (!watches.isEmpty()) {
                Watch w = watches.get(u.tag);
                if (w != null && w.flags() != u.flags) {
                    watches.remove(u.tag);
                    // reported after the match lock is released: the callback fails requests, which takes it again
                    FingerprintMismatchException e = new FingerprintMismatchException(u.src, u.flags, w.flags());
                    Thread.ofVirtual().start(() -> w.onMismatch().accept(e));
                }
            }
            if (probes.isEmpty()) return null;
            List<ProbeRequest> hit = null;
            for (Iterator<ProbeRequest> it = probes.iterator(); it.hasNext(); ) {
                ProbeRequest p = it.next();
                if (p.matches(u.src, u.tag)) {
                    it.remove();
                    if (hit == null) hit = new ArrayList<>();
                    hit.add(p);
                }
            }
            return hit;
        }

        Unexpected peekUnexpected(int src, int tag) {
            for (Unexpected u : unexpected) {
                if (matches(src, tag, u.src, u.tag)) return u;
            }
            return null;
        }

        RecvRequest takePosted(int src, int tag) {
            for (int i = 0; i < posted.size(); i++) {
                RecvRequest r = posted.get(i);
                if (r.matches(src, tag)) return posted.remove(i);
            }
            return null;
        }

        Unexpected takeUnexpected(RecvRequest r) {
            for (int i = 0; i < unexpected.size(); i++) {
                Unexpected u = unexpected.get(i);
                if (r.matches(u.src, u.tag)) return unexpected.remove(i);
            }
            return null;
        }
    }
}
