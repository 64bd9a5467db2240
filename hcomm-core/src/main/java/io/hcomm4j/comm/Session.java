package io.hcomm4j.comm;

import io.hcomm4j.CommConfig;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.Communicator;
import io.hcomm4j.bootstrap.Bootstrap;
import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.security.Auth;
import io.hcomm4j.HcommException;
import io.hcomm4j.SessionProvider;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.transport.HostIdentity;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.ShmOptions;
import io.hcomm4j.transport.TransportOptions;
import io.hcomm4j.transport.TransportEvents;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One process's HComm4J session: the store, the transport (listener, connections, progress thread) and
 * the world communicator. Init is a rendezvous: every rank publishes its data address under a per-init
 * namespace of the store and waits until all have, so a session is usable once {@link #open} returns.
 */
public final class Session implements SessionProvider.SessionHandle {
    private static final Logger LOG = LoggerFactory.getLogger(Session.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final CommConfig config;
    private final Bootstrap.Joined joined;
    private final String namespace;
    private final PeerTransport transport;
    private final CommunicatorImpl world;
    private final List<AutoCloseable> children = new CopyOnWriteArrayList<>();
    private final ScratchPool scratch = new ScratchPool();
    private final Tuner tuner;
    /** Registered memory of this session, shared by all its communicators. */
    private final MemoryPool memory;
    private volatile boolean closed;
    /** Every open communicator by id (world and children): where failures and abort notices go. */
    private final java.util.concurrent.ConcurrentHashMap<Long, CommunicatorImpl> comms = new java.util.concurrent.ConcurrentHashMap<>();
    /** Abort notices for communicators not created here yet (id → aborting world rank). */
    private final java.util.concurrent.ConcurrentHashMap<Long, Integer> earlyAborts = new java.util.concurrent.ConcurrentHashMap<>();
    /** Why another rank declared this one failed, or null. */
    private volatile String declaredFailed;
    private final OpMonitor monitor;
    private final TraceDumps traces;
    /** Explains a point-to-point wait that timed out (what the awaited ranks do, a likely deadlock). */
    private final WaitDiagnosis waits;
    private final Object eventsLock = new Object();
    /** Runs health listeners, one at a time ({@code hcomm-events-<rank>}); created on first use. */
    private java.util.concurrent.ExecutorService eventThread;
    private volatile Thread eventThreadRef;

    /** Where each world rank listens, which share this host, and their host ids: updated when a slot is taken over (grow). */
    private final InetSocketAddress[] book;
    private final boolean[] sameHost;
    private volatile io.hcomm4j.rma.RmaService rma;
    private final String[] hostIds;
    private final String hostId;
    /** Whether each world rank takes part in zero-copy collectives (shared memory and HCOMM_ZERO_COPY on). */
    private final boolean[] zeroCopyRanks;

    Session(CommConfig config, Bootstrap.Joined joined, String namespace, PeerTransport transport, MemoryPool memory,
                    Events events, InetSocketAddress[] book, boolean[] sameHost, String[] hostIds, String hostId,
                    long worldId, int[] worldGroup, boolean[] zeroCopyRanks, io.hcomm4j.algo.TuningTable table) {
        this.book = book;
        this.sameHost = sameHost;
        this.hostIds = hostIds;
        this.hostId = hostId;
        this.zeroCopyRanks = zeroCopyRanks;
        this.config = config;
        this.joined = joined;
        this.namespace = namespace;
        this.transport = transport;
        this.memory = memory;
        // within a host: the rings, unless HCOMM_TRANSPORT=tcp keeps same-host pairs on loopback TCP
        this.tuner = SessionTuning.tuner(config, table, joined.rank(), hostIds);
        this.monitor = new OpMonitor(this, transport, joined.store(), namespace, joined.rank(), joined.worldSize(),
                config.stuckReport().toNanos());
        this.traces = new TraceDumps(this, joined.store(), namespace, joined.rank(), joined.worldSize(), config.monitor());
        this.waits = new WaitDiagnosis(transport, joined.store(), namespace, joined.rank(), config.eagerLimit());
        if (worldGroup == null) {
            this.world = new CommunicatorImpl(this, transport, 0L, joined.rank(), joined.worldSize(), hostIds);
        } else {
            this.world = CommunicatorImpl.ofGroup(this, transport, worldId, joined.rank(), worldGroup, hostIds);
        }
        events.session = this;
        registerCommunicator(world);
    }

    /**
     * The transport's events, forwarded to the session once it exists: failures go to every communicator the failed rank
     * belongs to, abort notices to their communicator, status requests and ticks to the {@link OpMonitor}.
     */
    static final class Events implements TransportEvents {
        volatile Session session;

        @Override
        public void peerFailed(int rank, String why) {
            Session s = session;
            if (s == null) return; // registerCommunicator reads the failures known by then
            for (CommunicatorImpl c : s.comms.values()) c.onMemberFailed(rank, why);
            io.hcomm4j.rma.RmaService r = s.rma;
            if (r != null) r.peerFailed(rank, s.transport.failure(rank, "one-sided op"));
        }

        @Override
        public void peerLeft(int rank) {
            Session s = session;
            if (s == null || s.closed) return;
            for (CommunicatorImpl c : s.comms.values()) c.onMemberLeft(rank);
        }

        @Override
        public void declaredFailed(int by, String why) {
            Session s = session;
            if (s == null) return;
            s.declaredFailed = why;
            for (CommunicatorImpl c : s.comms.values()) c.onDeclaredFailed(why);
        }

        @Override
        public void abortNotice(long commId, int from) {
            Session s = session;
            if (s == null) return;
            CommunicatorImpl c = s.comms.get(commId);
            if (c != null) {
                c.onAbortNotice(from);
            } else {
                s.earlyAborts.put(commId, from);
                c = s.comms.get(commId); // created meanwhile: registerCommunicator may have missed the notice
                if (c != null) c.onAbortNotice(from);
            }
        }

        @Override
        public void statusRequested(int from) {
            Session s = session;
            if (s != null) s.monitor.requestPublish();
        }

        @Override
        public String explainWait() {
            Session s = session;
            return s == null || s.closed ? "" : s.waits.explain();
        }

        @Override
        public void tick(long nowNanos) {
            Session s = session;
            if (s != null && !s.closed) {
                s.monitor.tick(nowNanos);
                s.traces.tick(nowNanos);
            }
        }

        @Override
        public void timedOut(Throwable timeout) {
            Session s = session;
            if (s != null && !s.closed) s.traces.timedOut(timeout);
        }
    }

    /** Publishes this rank's state at the next watchdog tick (someone watches: {@code hcomm status --watch}). */
    void requestStatusPublish() {
        monitor.requestPublish();
    }

    /** When this rank writes its flight record. */
    TraceDumps traces() {
        return traces;
    }

    /** See {@link PeerTransport#explainWait}: ": rank 1 waits in ...: a likely deadlock: ...", or "". */
    String explainWait(long waitedNanos) {
        return transport.explainWait(waitedNanos);
    }

    private volatile AppStore appStore;

    /** The job's store for the application (made on first use). */
    io.hcomm4j.KeyValueStore appStore() {
        AppStore a = appStore;
        if (a == null) appStore = a = new AppStore(joined.store(), joined.rank());
        return a;
    }

    /** See {@link WaitDiagnosis#recent}, as ": ..." or "". */
    String recentExplanation(long maxAgeNanos) {
        String r = waits.recent(maxAgeNanos);
        return r.isEmpty() ? "" : ": " + r;
    }

    /** Starts routing failures and abort notices to {@code c}; applies those already known. */
    void registerCommunicator(CommunicatorImpl c) {
        comms.put(c.id(), c);
        if (world != null) DebugReport.communicator(this, c);
        for (int w : transport.failedRanks()) c.onMemberFailed(w, String.valueOf(transport.failureReason(w)));
        String d = declaredFailed;
        if (d != null) c.onDeclaredFailed(d);
        Integer from = earlyAborts.remove(c.id());
        if (from != null) c.onAbortNotice(from);
    }

    void unregisterCommunicator(CommunicatorImpl c) {
        comms.remove(c.id(), c);
    }

    /** The open communicators. */
    java.util.Collection<CommunicatorImpl> communicators() {
        return comms.values();
    }

    /**
     * A communicator's health changed to {@code health}: its listeners are called on the event thread, in order, and the
     * rank's state is published for {@code hcomm status}.
     */
    void healthChanged(CommunicatorImpl c, io.hcomm4j.Health health,
                       java.util.List<java.util.function.Consumer<io.hcomm4j.Health>> listeners) {
        monitor.requestPublish();
        if (listeners.isEmpty()) return;
        Runnable call = () -> {
            for (java.util.function.Consumer<io.hcomm4j.Health> l : listeners) {
                try {
                    l.accept(health);
                } catch (RuntimeException e) {
                    LOG.warn("rank {}: a health listener of {} threw", joined.rank(), c, e);
                }
            }
        };
        synchronized (eventsLock) {
            if (closed) return;
            if (eventThread == null) {
                eventThread = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
                    Thread t = Thread.ofPlatform().daemon().name("hcomm-events-" + joined.rank()).unstarted(r);
                    eventThreadRef = t;
                    return t;
                });
            }
            eventThread.execute(call);
        }
    }

    /**
     * A replacement took world rank {@code slot}'s place (grow): its address and host come from the store, and the
     * transport forgets the failed process and expects {@code incarnation}.
     */
    void revive(int slot, long incarnation) {
        SessionStart.readAddress(joined.store(), namespace, slot, hostId, book, sameHost, hostIds, zeroCopyRanks, config.initTimeout());
        transport.revive(slot, incarnation);
    }

    /** Host ids by world rank (as published; updated when a slot is taken over). */
    String[] hostIds() {
        return hostIds.clone();
    }

    /** The world communicator. */
    public Communicator world() {
        return world;
    }

    /** The store of the session (the rendezvous; shrink and grow agree through it). */
    Store store() {
        return joined.store();
    }

    /** This session's namespace in the store ({@code hcomm/<generation>/}). */
    String namespace() {
        return namespace;
    }

    /** The settings. */
    public CommConfig config() {
        return config;
    }

    /**
     * What carries messages to world rank {@code rank} now: {@code "shm"}, {@code "tcp"}, {@code "tls"}, {@code "self"} or {@code "none"}
     * (no connection yet: connections open on first use).
     */
    public String transportTo(int rank) {
        return transport.transportTo(rank);
    }

    @Override
    public String algorithmFor(String op, long bytes) {
        io.hcomm4j.algo.Tuner.Op o = io.hcomm4j.algo.Tuner.op(op);
        if (bytes < 0) throw new IllegalArgumentException("bytes must be >= 0, was " + bytes);
        return io.hcomm4j.algo.Tuner.name(((CommunicatorImpl) world).transportCollectives().tunerChoice(o, bytes));
    }

    @Override
    public List<io.hcomm4j.Hcomm.Link> linksTo(int rank) {
        List<io.hcomm4j.Hcomm.Link> out = new java.util.ArrayList<>();
        for (var l : transport.linkStats(rank)) {
            out.add(new io.hcomm4j.Hcomm.Link(l.index(), l.kind(), l.route(), l.bytesPerSecond(), l.bytes(), l.roundTripNanos(),
                    l.unsentBytes(), l.congestion()));
        }
        return out;
    }

    /** The session's memory pool. */
    public MemoryPool memory() {
        return memory;
    }

    /** World rank {@code p} is another process of this host. */
    boolean sameHost(int p) {
        return sameHost[p];
    }

    /** The session's one-sided layer, made on first use (it installs the transport's RMA handler). */
    synchronized io.hcomm4j.rma.RmaService rma() {
        if (rma == null) rma = new io.hcomm4j.rma.RmaService(transport, world.world(world.rank()));
        return rma;
    }

    /**
     * The zero-copy engine of a communicator with {@code size} ranks ({@code group}: its ranks' world ranks, null for
     * the world), or null if not every one of them is on this host with shared memory and zero copy on.
     */
    ZeroCopyEngine zeroCopy(long commId, int rank, int size, int[] group) {
        if (size < 2) return null;
        int[] world = new int[size];
        String host = hostIds[group == null ? 0 : group[0]];
        for (int r = 0; r < size; r++) {
            int w = group == null ? r : group[r];
            if (!zeroCopyRanks[w] || !hostIds[w].equals(host)) return null;
            world[r] = w;
        }
        return ZeroCopyEngine.create(transport, memory, joined.store(), namespace + "zc/" + Long.toHexString(commId),
                config.timeout(), config.initTimeout(), rank, size, world, commId);
    }

    void register(AutoCloseable child) {
        children.add(child);
    }

    void unregister(AutoCloseable child) {
        children.remove(child);
    }

    Tuner tuner() {
        return tuner;
    }

    ScratchPool scratch() {
        return scratch;
    }

    boolean isClosed() {
        return closed;
    }

    /** Closes streams, communicators, connections, threads and the store (and the store server rank 0 hosts). */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        monitor.close();
        for (AutoCloseable c : children) SessionStart.closeQuietly(c);
        world.markClosed();
        transport.close();
        stopEventThread();
        scratch.close();
        memory.close();
        if (joined.owned() != null) {
            // the store lives in this process: let every rank finish its init reads before it goes away
            SessionStart.awaitStarted(joined.store(), namespace, joined.worldSize(), config);
        }
        SessionStart.closeQuietly(joined.store());
        SessionStart.closeQuietly(joined.owned());
    }

    private void stopEventThread() {
        java.util.concurrent.ExecutorService ex;
        synchronized (eventsLock) {
            ex = eventThread;
            eventThread = null;
        }
        if (ex == null) return;
        ex.shutdown();
        if (Thread.currentThread() == eventThreadRef) return; // a listener closes the session: its thread ends after it
        try {
            if (!ex.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS)) {
                LOG.warn("rank {}: a health listener still runs after 5 s; the session closes without it", joined.rank());
                ex.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
