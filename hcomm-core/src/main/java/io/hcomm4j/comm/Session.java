package io.hcomm4j.comm;

import io.hcomm4j.CommConfig;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.Communicator;
import io.hcomm4j.bootstrap.Bootstrap;
import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.security.Auth;
import io.hcomm4j.HcommException;
import io.hcomm4j.transport.HostIdentity;
import io.hcomm4j.transport.TcpTransport;
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
public final class Session implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Session.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final CommConfig config;
    private final Bootstrap.Joined joined;
    private final String namespace;
    private final TcpTransport transport;
    private final CommunicatorImpl world;
    private final List<AutoCloseable> children = new CopyOnWriteArrayList<>();
    private final ScratchPool scratch = new ScratchPool();
    private final io.hcomm4j.algo.Tuner tuner;
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
    private final Object eventsLock = new Object();
    /** Runs health listeners, one at a time ({@code hcomm-events-<rank>}); created on first use. */
    private java.util.concurrent.ExecutorService eventThread;
    private volatile Thread eventThreadRef;

    private Session(CommConfig config, Bootstrap.Joined joined, String namespace, TcpTransport transport, MemoryPool memory,
                    Events events) {
        this.config = config;
        this.joined = joined;
        this.namespace = namespace;
        this.transport = transport;
        this.memory = memory;
        this.tuner = new io.hcomm4j.algo.Tuner(io.hcomm4j.algo.Tuner.LinkCost.TCP_LOOPBACK, io.hcomm4j.algo.Tuner.parse(config.algo()));
        this.monitor = new OpMonitor(this, transport, joined.store(), namespace, joined.rank(), joined.worldSize(),
                config.stuckReport().toNanos());
        this.world = new CommunicatorImpl(this, transport, 0L, joined.rank(), joined.worldSize());
        events.session = this;
        registerCommunicator(world);
    }

    /**
     * The transport's events, forwarded to the session once it exists: failures go to every communicator the failed rank
     * belongs to, abort notices to their communicator, status requests and ticks to the {@link OpMonitor}.
     */
    private static final class Events implements TcpTransport.Events {
        volatile Session session;

        @Override
        public void peerFailed(int rank, String why) {
            Session s = session;
            if (s == null) return; // registerCommunicator reads the failures known by then
            for (CommunicatorImpl c : s.comms.values()) c.onMemberFailed(rank, why);
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
        public void tick(long nowNanos) {
            Session s = session;
            if (s != null && !s.closed) s.monitor.tick(nowNanos);
        }
    }

    /** Starts routing failures and abort notices to {@code c}; applies those already known. */
    void registerCommunicator(CommunicatorImpl c) {
        comms.put(c.id(), c);
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

    /** Runs init: rendezvous through the store, data listener, world communicator. */
    public static Session open(CommConfig config) {
        long start = System.nanoTime();
        Bootstrap.Joined j = Bootstrap.join(config);
        TcpTransport t = null;
        MemoryPool pool = null;
        try {
            // first, so that files a killed job left in the directory are gone before this session creates any
            Path shmDir = Path.of(config.shmDir());
            pool = MemoryPool.open(new MemoryPool.Options(shmDir, config.memPoolMax(), config.memDebug()));
            Store store = j.store();
            int rank = j.rank();
            int size = j.worldSize();
            Duration initTimeout = config.initTimeout();
            // every init on one store gets its own namespace: the k-th init of rank r uses generation k
            long generation = store.add("hcomm/generation/" + rank, 1);
            String ns = "hcomm/" + generation + "/";
            if (rank == 0) {
                store.set(ns + "token", ByteBuffer.allocate(8).putLong(RANDOM.nextLong()).array());
            }
            long token = ByteBuffer.wrap(store.get(ns + "token", initTimeout)).getLong();
            TcpTransport.Options options = new TcpTransport.Options(config.timeout(), initTimeout, config.spinTime(),
                    config.eagerLimit(), config.unexpectedLimit(), config.heartbeatTimeout(), config.heartbeatInterval(),
                    config.retryMax(), config.retryInterval());
            t = TcpTransport.open(rank, size, j.dataAddress(), Auth.of(config.secret().orElse(null)), token, options);
            InetSocketAddress me = t.listenAddress();
            String host = config.hostId().orElseGet(() -> HostIdentity.of(shmDir));
            store.set(ns + "addr/" + rank, (me.getAddress().getHostAddress() + " " + me.getPort() + " " + host).getBytes(StandardCharsets.UTF_8));
            long count = store.add(ns + "joined", 1);
            if (count == size) store.set(ns + "ready", new byte[] {1});
            try {
                store.get(ns + "ready", initTimeout);
            } catch (CommTimeoutException e) {
                byte[] n = store.tryGet(ns + "joined");
                throw new CommTimeoutException("rank " + rank + ": init: only " + (n == null ? "?" : new String(n, StandardCharsets.UTF_8))
                        + " of " + size + " ranks joined within " + initTimeout + " (HCOMM_INIT_TIMEOUT)");
            }
            InetSocketAddress[] book = new InetSocketAddress[size];
            boolean[] sameHost = new boolean[size];
            List<Integer> elsewhere = new java.util.ArrayList<>();
            for (int p = 0; p < size; p++) {
                String[] hp = new String(store.get(ns + "addr/" + p, initTimeout), StandardCharsets.UTF_8).split(" ");
                book[p] = new InetSocketAddress(hp[0], Integer.parseInt(hp[1]));
                sameHost[p] = p != rank && hp.length > 2 && hp[2].equals(host);
                if (p != rank && !sameHost[p]) elsewhere.add(p);
            }
            int local = 1;
            for (boolean b : sameHost) if (b) local++;
            t.oversubscribed(local > Runtime.getRuntime().availableProcessors());
            store.add(ns + "started", 1);
            if (config.transport() == CommConfig.Transport.SHM && !elsewhere.isEmpty()) {
                // every rank fails the same way; the store's host lets the others read the addresses first
                if (j.owned() != null) awaitStarted(store, ns, size, config);
                throw new HcommException("rank " + rank + ": HCOMM_TRANSPORT=shm, but ranks " + elsewhere + " are on other hosts "
                        + "(host id here " + host + "; see HCOMM_HOST_ID); use HCOMM_TRANSPORT=auto or tcp");
            }
            if (config.transport() != CommConfig.Transport.TCP) {
                t.enableShm(new TcpTransport.ShmOptions(shmDir, (int) config.shmRingSize(), p -> sameHost[p], pool));
            }
            Events events = new Events();
            t.setEvents(events);
            t.start(p -> book[p]);
            Session s = new Session(config, j, ns, t, pool, events);
            LOG.debug("rank {}/{}: init took {} ms, listening on {}", rank, size, (System.nanoTime() - start) / 1_000_000, me);
            return s;
        } catch (RuntimeException e) {
            if (t != null) t.close();
            if (pool != null) pool.close();
            closeQuietly(j.store());
            closeQuietly(j.owned());
            throw e;
        }
    }

    /** The world communicator. */
    public Communicator world() {
        return world;
    }

    /** The settings. */
    public CommConfig config() {
        return config;
    }

    /**
     * What carries messages to world rank {@code rank} now: {@code "shm"}, {@code "tcp"}, {@code "self"} or {@code "none"}
     * (no connection yet: connections open on first use).
     */
    public String transportTo(int rank) {
        return transport.transportTo(rank);
    }

    /** The session's memory pool. */
    public MemoryPool memory() {
        return memory;
    }

    void register(AutoCloseable child) {
        children.add(child);
    }

    void unregister(AutoCloseable child) {
        children.remove(child);
    }

    io.hcomm4j.algo.Tuner tuner() {
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
        for (AutoCloseable c : children) closeQuietly(c);
        world.markClosed();
        transport.close();
        stopEventThread();
        scratch.close();
        memory.close();
        if (joined.owned() != null) {
            // the store lives in this process: let every rank finish its init reads before it goes away
            awaitStarted(joined.store(), namespace, joined.worldSize(), config);
        }
        closeQuietly(joined.store());
        closeQuietly(joined.owned());
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

    /** Waits (bounded) until every rank has read the addresses: the store may go away after that. */
    private static void awaitStarted(Store store, String namespace, int size, CommConfig config) {
        long deadline = System.nanoTime() + Math.min(config.initTimeout().toNanos(), 10_000_000_000L);
        while (System.nanoTime() < deadline) {
            byte[] v = store.tryGet(namespace + "started");
            if (v != null && Long.parseLong(new String(v, StandardCharsets.UTF_8)) >= size) break;
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (Exception e) {
            LOG.debug("close failed", e);
        }
    }
}
