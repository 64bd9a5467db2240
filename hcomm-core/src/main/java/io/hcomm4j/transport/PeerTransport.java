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
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;
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
 * {@link TransportEvents#peerFailed} tells the layer above. With heartbeats on, each rank keeps a connection to the next live
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
    static {
        EarlyClassLoading.run(); // before anything that uses segments is compiled
    }

    /** Wildcard for source or tag in {@link #recv}. */
    public static final int ANY = -1;
    /** Largest eager frame a receiver accepts from anyone (the configured limit is at most this). */
    static final long MAX_EAGER = 64L << 20;
    /** Largest payload of one RMA frame ({@link #sendRma}); the RMA layer splits larger transfers. */
    public static final long MAX_RMA_PAYLOAD = 64L << 20;

    static final Logger LOG = LoggerFactory.getLogger(PeerTransport.class);
    /** How long close waits for what was sent to be written and, on reliable links, acknowledged. */
    private static final long BYE_DRAIN_NANOS = 2_000_000_000L;

    final int rank;
    final int size;
    final long timeoutNanos;
    final Progress progress;
    private final ServerSocketChannel listener;
    private final Thread acceptor;
    private final PeerLink[] links;
    /** Same-host rings, or null: TCP to every peer. */
    private volatile ShmOptions shm;
    /** UCX's worker for every link (HCOMM_TRANSPORT=ucx), or null. */
    private volatile UcxEngine ucx;
    /** Guards the match tables and the failed ranks together (see {@link Matching}, {@link Failures}). */
    private final ReentrantLock matchLock = new ReentrantLock();
    private volatile boolean closing;
    /**
     * The session closes and its links stop being kept alive: no more reconnects (set by {@link #close} once links being
     * re-established had their chance and what was sent before close was acknowledged).
     */
    private volatile boolean linksClosing;
    /**
     * Incarnation of each world rank's process: 0 for the first, n for the n-th replacement that took the slot of a
     * failed rank ({@link #revive}). A hello carries the sender's (added to the job token), so a previous incarnation
     * cannot connect as the new one.
     */
    private final long[] incarnations;
    final Watchdog watchdog;
    /** The extra links to each peer (HCOMM_SOCKET_IFNAME with several interfaces, HCOMM_CHANNELS). */
    final Rails rails;
    /** The congestion control of its TCP links (HCOMM_TCP_CONGESTION). */
    final CongestionControl congestion;
    final long heartbeatTimeoutNanos;
    final long heartbeatIntervalNanos;
    /** Reconnect attempts for a lost connection (0: none, links are not reliable) and the first attempt's window. */
    final int retryMax;
    final long retryIntervalNanos;
    /** Bounds against floods and hostile peers. */
    final TransportLimits limits;
    final Matching matching;
    final Rendezvous rendezvous;
    final Failures failures;
    final Connections connections;
    final Reconnector reconnector;
    final RmaFrames rma;
    /** What the links ask of the transport; counts reconnects (diagnostics, tests). */
    final TransportLinkHost host;
    /** The job's handshake; without a secret it also keeps every listener on loopback. */
    final Auth auth;

    private PeerTransport(int rank, int size, InetAddress bind, Auth auth, long jobToken, TransportOptions o) throws IOException {
        this.rank = rank;
        this.size = size;
        this.timeoutNanos = o.timeout().toNanos();
        this.progress = new Progress("hcomm-progress-" + rank, o.spinTime().toNanos());
        this.links = new PeerLink[size];
        this.incarnations = new long[size];
        this.heartbeatTimeoutNanos = o.heartbeatTimeout().toNanos();
        this.heartbeatIntervalNanos = o.heartbeatInterval().toNanos();
        this.retryMax = o.retryMax();
        this.retryIntervalNanos = o.retryInterval().toNanos();
        this.auth = auth;
        this.listener = ServerSocketChannel.open();
        listener.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        listener.bind(new InetSocketAddress(bind, 0), Math.max(64, size));
        this.limits = o.limits();
        this.matching = new Matching(this, rank, o.eagerLimit(), links, matchLock, limits);
        this.rendezvous = new Rendezvous(this, rank, o.eagerLimit(), links);
        this.failures = new Failures(this, rank, links, matchLock);
        this.connections = new Connections(this, rank, links, auth, jobToken, o.connectTimeout(), o.unexpectedLimit(),
                listener, incarnations, o.limits().accept());
        this.reconnector = new Reconnector(this, rank);
        this.rma = new RmaFrames(this, rank, links);
        this.host = new TransportLinkHost(this, o.unexpectedLimit(), retryMax, matching, rendezvous, failures, connections,
                reconnector, rma);
        for (int i = 0; i < size; i++) links[i] = new PeerLink(host, i);
        this.acceptor = Thread.ofPlatform().daemon().name("hcomm-accept-" + rank).unstarted(connections::acceptLoop);
        this.watchdog = new Watchdog(this);
        this.rails = new Rails(this, rank, size);
        this.congestion = new CongestionControl(rank);
    }

    /**
     * Opens the listener on {@code bind} (an ephemeral port). Call {@link #start} once every rank's address
     * is known.
     *
     * @param jobToken a number every rank of this job shares (from the store), so connections from another
     *                 job that happens to use the same secret are refused
     */
    public static PeerTransport open(int rank, int size, InetAddress bind, Auth auth, long jobToken, TransportOptions options) {
        auth.checkListen(bind, "rank " + rank + "'s data listener");
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

    /**
     * Tells the progress engine that this host runs more ranks than this process has CPUs: waiters then yield
     * the core from their first empty poll instead of spinning flat out for a while (the rank they wait for may
     * need this very core).
     */
    public void oversubscribed(boolean yes) {
        progress.oversubscribed = yes;
    }

    /** Whether this host runs more ranks than they have CPUs ({@link #oversubscribed(boolean)}). */
    public boolean oversubscribed() {
        return progress.oversubscribed;
    }

    /**
     * Several links to each peer over TCP (call before {@link #start}, and before publishing the addresses): {@code extra}
     * this rank's addresses on further interfaces (each gets a listener: {@link #railAddresses}), {@code channels}
     * connections per interface. Large messages are striped over the links ({@link Rails}).
     */
    public void enableRails(List<InetAddress> extra, int channels) {
        for (InetAddress a : extra) auth.checkListen(a, "rank " + rank + "'s data listener on a further interface (HCOMM_SOCKET_IFNAME)");
        rails.configure(listenAddress().getAddress(), extra, channels);
    }

    /**
     * Every TCP link of this transport uses congestion control algorithm {@code name} (call before {@link #start});
     * null or empty: the system's. See {@link CongestionControl}.
     *
     * @throws IllegalArgumentException if the kernel has no such algorithm
     */
    public void tcpCongestion(String name) {
        congestion.choose(name);
    }

    /** This rank's listen addresses on the further interfaces of {@link #enableRails} (to publish beside {@link #listenAddress}). */
    public List<InetSocketAddress> railAddresses() {
        return rails.listenAddresses();
    }

    /** Where each peer listens on its further interfaces (what it published from {@link #railAddresses}); before {@link #start}. */
    public void setRailBook(IntFunction<List<InetSocketAddress>> book) {
        rails.setBook(book);
    }

    /**
     * The links to world rank {@code peer} that are up, the primary first, each with its route, measured rate and the
     * chunk bytes it carried (diagnostics, {@code hcomm perf}).
     */
    public List<LinkStats> linkStats(int peer) {
        return peer == rank ? List.of() : rails.stats(links[peer]);
    }

    /**
     * Talk to every peer that does the same through UCX ({@code HCOMM_TRANSPORT=ucx}; call before {@link #start}): opens
     * a UCP context and worker (settings from the {@code UCX_*} environment) and offers its address in every hello;
     * registers {@code pool}'s mappings with UCX (null: no pool) as the pool makes them.
     *
     * @throws io.hcomm4j.HcommException naming the library and the setting if UCX is missing or too old
     */
    public void enableUcx(io.hcomm4j.memory.MemoryPool pool) {
        UcxEngine u = UcxEngine.open(rank, progress.selector);
        this.ucx = u;
        progress.setUcx(u);
        if (pool != null) u.registerPool(pool);
    }

    /**
     * What went straight through UCX: {large messages sent and received through UCX's tag matching straight between
     * the buffers, one-sided ops (puts, gets, atomics, flushes) straight into a window's memory, large messages whose
     * buffers were registered ahead (pool memory), pool mappings registered now} (zeros without UCX).
     * Diagnostics and tests.
     */
    public long[] ucxTaggedMessages() {
        UcxEngine u = ucx;
        return u == null ? new long[5] : new long[] {u.taggedSends.get(), u.taggedReceives.get(), u.oneSidedOps.get(),
                u.registeredTransfers.get(), u.registeredMappings()};
    }

    /** The UCX side of this transport for one-sided ops, or null: no UCX. */
    public UcxRemoteAccess ucxRemoteAccess() {
        UcxEngine u = ucx;
        return u == null ? null : new UcxRemoteAccess(this, u);
    }

    /** The UCX engine, or null: no UCX. */
    UcxEngine ucx() {
        return ucx;
    }

    /** Talk to the peers {@code options.sameHost()} names through shared-memory rings (call before {@link #start}). */
    public void enableShm(ShmOptions options) {
        this.shm = options;
    }

    /**
     * What carries the bytes to world rank {@code peer} now: {@code "shm"}, {@code "tcp"}, {@code "tls"}, {@code "ucx"}, {@code "self"}, or {@code "none"}
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
        return host.reconnects.get();
    }

    /** Test hook: breaks the connection to {@code peer} now, as {@code how} says, without a BYE; false if it is not connected. */
    boolean drop(int peer, Conduit.Drop how) {
        return links[peer].drop(how);
    }

    /**
     * Test hook: as if the network to every peer were cut: reconnect attempts fail (no route) and incoming reconnects
     * are turned down.
     */
    volatile boolean unreachable;

    /** Test hook: the poller breaks the connection to {@code peer} as {@code how} says once it has read {@code bytes} more from it. */
    void dropAfter(int peer, long bytes, Conduit.Drop how) {
        links[peer].reader.dropAfter(bytes, how);
    }

    /** Where failures, abort notices and status requests go (call before {@link #start}). */
    public void setEvents(TransportEvents events) {
        failures.setEvents(events);
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
        connections.setAddressBook(addressBook);
        rails.start(addressBook);
        progress.start();
        acceptor.start();
        watchdog.start();
        if (neighbour) failures.connectNeighbour();
    }

    /** With heartbeats on: opens the connection to the next live rank now, if it is not open (in the background). */
    public void connectNeighbourNow() {
        failures.connectNeighbour();
    }

    /**
     * Ranks come and go and most slots are empty (a transfer engine's): no ring of neighbour connections, so a failure
     * reaches only the peers connected to a rank that saw it. Call before {@link #start}.
     */
    public void withoutNeighbourRing() {
        failures.neighbourRing = false;
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
            failures.revive(p);
            matching.revive(p);
            incarnations[p] = incarnation;
            rails.forget(p);
            links[p] = new PeerLink(host, p);
        } finally {
            matchLock.unlock();
        }
        failures.connectNeighbour();
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
        failures.assumeDead(p, why);
    }

    /** Whether heartbeats run (HCOMM_HEARTBEAT_TIMEOUT > 0). */
    boolean heartbeats() {
        return heartbeatTimeoutNanos > 0;
    }

    PeerLink[] links() {
        return links;
    }

    TransportEvents events() {
        return failures.events();
    }

    /**
     * True if threads other than the caller may read and write {@code buf}: the transport's threads and any
     * waiting thread do the I/O, so a segment confined to one thread cannot be used.
     */
    public boolean usableFromAnyThread(MemorySegment buf) {
        return buf.isAccessibleBy(acceptor);
    }

    /**
     * Waits until {@code w} is done or {@code deadline} ({@link System#nanoTime()}) passed, driving this transport's
     * progress meanwhile (see {@link SharedWait}). Allocates nothing unless it blocks.
     *
     * @return true if {@code w} is done
     */
    public boolean await(SharedWait w, long deadline) {
        return progress.awaitShared(w, deadline);
    }

    /** As {@link #await}, polling from the start: for what frames complete (replies), not what peers' stores do. */
    public boolean awaitPolling(SharedWait w, long deadline) {
        return progress.awaitUntil(new Progress.PolledWait(w), deadline);
    }

    /** Wakes this process's own progress engine, so a waiter blocked in it looks again at what it waits for. */
    public void wakeLocal() {
        progress.wakeup();
    }

    /**
     * Rings the doorbell of world rank {@code peer}: its progress engine wakes if it blocks, so a thread of it that
     * sleeps on a {@link SharedWait} looks again. Does nothing unless the pair is connected through shared memory.
     */
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
        connections.linkTo(peer, deadline);
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
        return matching.failures();
    }

    /** Whether world rank {@code peer} has failed or closed its session. */
    public boolean failed(int peer) {
        return matching.failed(peer);
    }

    /** The exception an op ({@code what}) that depends on the failed world rank {@code peer} fails with. */
    public PeerFailedException failure(int peer, String what) {
        return failures.peerFailed(peer, what, null);
    }

    /** True once {@link #close()} began. */
    public boolean isClosing() {
        return closing;
    }

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
        return rendezvous.send(commId, dst, tag, buf, flags, rankMap, false);
    }

    /**
     * As {@link #send(long, int, int, MemorySegment, int, int[])}; {@code high}: the message's payload goes before the
     * payloads of others to the same peer (a large one's chunks first; a small one waits at most for the chunk being
     * written, as any small message does).
     */
    public SendRequest send(long commId, int dst, int tag, MemorySegment buf, int flags, int[] rankMap, boolean high) {
        return rendezvous.send(commId, dst, tag, buf, flags, rankMap, high);
    }

    /** Where arriving RMA frames go ({@link RmaHandler}); without one they are read and dropped (logged once at WARN). */
    public void setRmaHandler(RmaHandler handler) {
        rma.setHandler(handler);
    }

    /**
     * Sends an RMA frame to world rank {@code peer}; {@code payload} (null: none; heap or off-heap, at most
     * {@link #MAX_RMA_PAYLOAD}) is written straight from the segment. Never blocks in an {@link RmaHandler} callback (a
     * reply to a connected peer); elsewhere it may wait for a first connection, as {@link #send}. Completes when the
     * payload was written out; on a reliable link one above 64 KiB when the peer acknowledged it (the resend log refers
     * to it; smaller ones are copied into the log). A failed peer fails it with {@link PeerFailedException}; this rank
     * itself, a rank out of range, or a payload too large or confined to one thread throw IllegalArgumentException.
     */
    public SendRequest sendRma(int peer, int flags, long windowId, int opId, long offset, MemorySegment payload) {
        return rma.send(peer, flags, windowId, opId, offset, payload);
    }

    /** Posts a receive from world rank {@code src} (or {@link #ANY}) with {@code tag} (or {@link #ANY}). */
    public RecvRequest recv(long commId, int src, int tag, MemorySegment buf) {
        return recv(commId, src, tag, buf, null);
    }

    /** As {@link #recv(long, int, int, MemorySegment)}; the Status reports {@code sourceMap[worldSource]} (null: the world rank). */
    public RecvRequest recv(long commId, int src, int tag, MemorySegment buf, int[] sourceMap) {
        return matching.recv(new RecvRequest(this, commId, src, tag, buf, sourceMap, false, 0));
    }

    /** As {@link #recv(long, int, int, MemorySegment, int[])}, recorded as {@code ticket} in {@code trace} (ended when it ends). */
    public RecvRequest recv(long commId, int src, int tag, MemorySegment buf, int[] sourceMap, io.hcomm4j.monitor.OpTrace trace, long ticket) {
        RecvRequest r = new RecvRequest(this, commId, src, tag, buf, sourceMap, false, 0);
        r.recordFromStart(trace, ticket);
        return matching.recv(r);
    }

    /**
     * Posts a receive that takes only a message carrying {@code expectFlags}; a matching message with other flags
     * fails it with {@link FingerprintMismatchException} (the message is consumed: its sender completes).
     */
    public RecvRequest recvChecked(long commId, int src, int tag, MemorySegment buf, int expectFlags) {
        return matching.recv(new RecvRequest(this, commId, src, tag, buf, null, true, expectFlags));
    }

    /**
     * The status of the first message from {@code src} (or {@link #ANY}) with {@code tag} (or {@link #ANY}) that a
     * receive posted now would get, or {@code null} if none has arrived. Source and tag are world rank and tag.
     */
    public io.hcomm4j.Status iprobe(long commId, int src, int tag, int[] sourceMap) {
        return matching.iprobe(commId, src, tag, sourceMap);
    }

    /** Completes with the status of the first matching message once one can be received (it is not received). */
    public ProbeRequest probe(long commId, int src, int tag, int[] sourceMap) {
        return matching.probe(commId, src, tag, sourceMap);
    }

    void abandonSend(SendRequest s) {
        matching.abandonSend(s);
    }

    /**
     * Watches messages of {@code commId} with {@code tag} (one collective op) while it runs: any such message
     * carrying other flags than {@code flags}, matched or not (already waiting, or arriving later), is reported
     * to {@code onMismatch} once, on the thread that saw it. Even a message for which no receive is posted
     * (the peer's algorithm differs because its root or op differs) reveals the mismatch, instead of a wait
     * until the timeout.
     */
    public void watch(long commId, int tag, int flags, java.util.function.Consumer<FingerprintMismatchException> onMismatch) {
        matching.watch(commId, tag, flags, onMismatch);
    }

    /**
     * The watched op finished on this rank: its watch now reports any message of it that still comes (flagged
     * {@link FingerprintMismatchException#late}) and drops that message; kept for the communicator's last ops.
     */
    public void retire(long commId, int tag) {
        matching.retire(commId, tag);
    }

    /** Ends a {@link #watch}. */
    public void unwatch(long commId, int tag) {
        matching.unwatch(commId, tag);
    }

    /** A receive or probe whose waiter gave up: withdraw it from its match table and fail it. */
    void abandonWaiting(Request<?> r) {
        matching.abandonWaiting(r);
    }

    /**
     * Fails {@code r} with {@code cause}; a receive or probe still waiting in its match table is taken out first, so
     * no later message lands in its buffer (a receive already taking data finishes taking it).
     */
    public void withdraw(Request<?> r, Throwable cause) {
        matching.withdraw(r, cause);
    }

    void onFinished(Request<?> r) {
        // hook for accounting and monitoring (per-op metrics come with the monitoring layer)
    }

    /** World ranks known to have failed (not those that closed in order), ascending. */
    public List<Integer> failedRanks() {
        return failures.failedRanks();
    }

    /** Why world rank {@code p} is known to have failed, or null. */
    public String failureReason(int p) {
        return failures.failureReason(p);
    }

    /**
     * Communicator {@code commId} was closed here: its pending ops fail with {@code error.get()} (as {@link #failCommunicator}),
     * its match tables go, and messages that still come for it are dropped (see {@link MatchTables}).
     */
    public void closeCommunicator(long commId, java.util.function.Supplier<? extends RuntimeException> error) {
        matching.closeCommunicator(commId, error);
    }

    /** Match tables held now, and the unexpected messages and bytes from peers in them: diagnostics and tests. */
    public long[] matchState() {
        matchLock.lock();
        try {
            return new long[] {matching.tables.size(), matching.tables.count(), matching.tables.bytes()};
        } finally {
            matchLock.unlock();
        }
    }

    /**
     * Aborts communicator {@code commId} here: every pending op on any of its channels (user, collective, notice,
     * check) fails with {@code error.get()} (a receive that is taking data has it discarded), and later messages for it
     * are dropped on arrival (eager ones read and dropped, rendezvous ones refused).
     */
    public void failCommunicator(long commId, java.util.function.Supplier<? extends RuntimeException> error) {
        matching.failCommunicator(commId, error);
    }

    /**
     * Tells every rank of {@code worldRanks} (but this one and failed ones) that communicator {@code commId} was aborted:
     * at once to connected peers, through a new connection (opened in the background) to the others. Returns at once.
     */
    public void sendAbort(long commId, int[] worldRanks) {
        failures.sendAbort(commId, worldRanks);
    }

    /** Asks the connected peer {@code p} to publish its state (an op of ours is stuck waiting for it). */
    public void requestStatus(int p) {
        failures.requestStatus(p);
    }

    /**
     * Point-to-point ops on user channels (collectives are tracked above) that have been pending for at least
     * {@code thresholdNanos}. The time is counted from the first call of this method that saw the op (the watchdog
     * calls it every tick), so ops cost nothing for this until they wait.
     */
    public List<PendingOp> pendingOps(long now, long thresholdNanos) {
        return matching.pendingOps(now, thresholdNanos);
    }

    /**
     * See {@link TransportEvents#explainWait}: ": rank 1 waits in send to rank 0 ...", or "" (also when the wait was
     * shorter than a second: a short deadline of the caller's own is no sign of a stuck job, and asking costs seconds).
     */
    public String explainWait(long waitedNanos) {
        if (waitedNanos < 1_000_000_000L || closing) return "";
        try {
            String why = failures.events().explainWait();
            return why == null || why.isEmpty() ? "" : ": " + why;
        } catch (RuntimeException e) {
            LOG.debug("rank {}: could not explain a wait: {}", rank, e.toString());
            return "";
        }
    }

    /**
     * Every pending point-to-point op on user channels, as {@link #pendingOps} would count it, changing nothing; and
     * those that ended in their timeout within {@link #TIMED_OUT_SHOWN_NANOS}: two ranks that wait for each other time out
     * at about the same moment, and the one that asks second must still see what the other waited in.
     */
    public List<PendingOp> pendingOpsNow(long now) {
        List<PendingOp> ops = matching.pendingOps(now, 0, false);
        synchronized (timedOut) {
            timedOut.removeIf(t -> now - t.endedAt() > TIMED_OUT_SHOWN_NANOS);
            if (timedOut.isEmpty()) return ops;
            List<PendingOp> all = new ArrayList<>(ops);
            for (TimedOut t : timedOut) all.add(t.op());
            return all;
        }
    }

    /** How long an op that timed out is still shown by {@link #pendingOpsNow}. */
    private static final long TIMED_OUT_SHOWN_NANOS = 10_000_000_000L;
    private static final int TIMED_OUT_KEPT = 16;

    private record TimedOut(PendingOp op, long endedAt) {
    }

    /** Point-to-point ops that ended in their timeout lately, oldest first (at most {@link #TIMED_OUT_KEPT}). */
    private final java.util.ArrayDeque<TimedOut> timedOut = new java.util.ArrayDeque<>();

    /** {@code r} (a user op) gave up after {@code waitedNanos}: see {@link #pendingOpsNow}. */
    void noteTimedOut(Request<?> r, long waitedNanos) {
        if (!(r instanceof SendRequest || r instanceof RecvRequest || r instanceof ProbeRequest)) return;
        PendingOp op = PendingOp.of(r, waitedNanos, false);
        if ((op.commId() >>> 62) != 0) return;
        synchronized (timedOut) {
            if (timedOut.size() == TIMED_OUT_KEPT) timedOut.removeFirst();
            timedOut.addLast(new TimedOut(op, System.nanoTime()));
        }
    }

    /**
     * Closes in order: says BYE on every connection, flushes what is queued (bounded), then closes sockets,
     * stops the acceptor and the progress thread. Pending ops fail with {@link CommAbortedException}.
     */
    @Override
    public void close() {
        if (closing) return;
        // a link being re-established gets the retry budget to come back, so what was sent on it before close arrives
        reconnector.awaitReconnecting(System.nanoTime() + Math.min(reconnector.retryBudgetNanos() + 1_000_000_000L, 10_000_000_000L));
        closing = true;
        watchdog.close();
        connections.sayBye(System.nanoTime() + BYE_DRAIN_NANOS);
        linksClosing = true;
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        rails.closeAll();
        progress.withToken(() -> {
            for (PeerLink l : links) {
                l.markClosed();
                failures.failOps(l, new ClosedChannelException());
            }
            connections.releaseAllRetired();
        });
        List<Request<?>> doomed = new ArrayList<>();
        matching.clear(doomed);
        for (Request<?> r : doomed) r.fail(new CommAbortedException("rank " + rank + ": " + r.describe() + " failed: the session is closed"));
        acceptor.interrupt();
        try {
            acceptor.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        progress.close();
        UcxEngine u = ucx;
        if (u != null) u.close(); // after the progress engine: nobody polls the worker now
    }

    /** Links are no longer kept alive: nothing is re-established. */
    boolean linksClosing() {
        return linksClosing;
    }

    /** The shared-memory settings, or null: TCP to every peer. */
    ShmOptions shm() {
        return shm;
    }

}
