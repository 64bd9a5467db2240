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

    /** Every world rank's host id, and whether it takes part in zero-copy collectives (shared memory and HCOMM_ZERO_COPY on). */
    private final String[] hostIds;
    private final boolean[] zeroCopyRanks;

    private Session(CommConfig config, Bootstrap.Joined joined, String namespace, TcpTransport transport, MemoryPool memory,
                    String[] hostIds, boolean[] zeroCopyRanks) {
        this.config = config;
        this.joined = joined;
        this.namespace = namespace;
        this.transport = transport;
        this.memory = memory;
        this.hostIds = hostIds;
        this.zeroCopyRanks = zeroCopyRanks;
        this.tuner = new io.hcomm4j.algo.Tuner(io.hcomm4j.algo.Tuner.LinkCost.TCP_LOOPBACK, io.hcomm4j.algo.Tuner.parse(config.algo()));
        this.world = new CommunicatorImpl(this, transport, 0L, joined.rank(), joined.worldSize());
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
                    config.eagerLimit(), config.unexpectedLimit());
            t = TcpTransport.open(rank, size, j.dataAddress(), Auth.of(config.secret().orElse(null)), token, options);
            InetSocketAddress me = t.listenAddress();
            String host = config.hostId().orElseGet(() -> HostIdentity.of(shmDir));
            // the fourth field says whether this rank takes part in zero-copy collectives: every rank must agree on it
            String zc = config.transport() != CommConfig.Transport.TCP && config.zeroCopy() ? "zc" : "-";
            store.set(ns + "addr/" + rank, (me.getAddress().getHostAddress() + " " + me.getPort() + " " + host + " " + zc)
                    .getBytes(StandardCharsets.UTF_8));
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
            String[] hostIds = new String[size];
            boolean[] zeroCopyRanks = new boolean[size];
            List<Integer> elsewhere = new java.util.ArrayList<>();
            for (int p = 0; p < size; p++) {
                String[] hp = new String(store.get(ns + "addr/" + p, initTimeout), StandardCharsets.UTF_8).split(" ");
                book[p] = new InetSocketAddress(hp[0], Integer.parseInt(hp[1]));
                hostIds[p] = hp.length > 2 ? hp[2] : "";
                zeroCopyRanks[p] = hp.length > 3 && hp[3].equals("zc");
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
            t.start(p -> book[p]);
            Session s = new Session(config, j, ns, t, pool, hostIds, zeroCopyRanks);
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
        for (AutoCloseable c : children) closeQuietly(c);
        world.markClosed();
        transport.close();
        scratch.close();
        memory.close();
        if (joined.owned() != null) {
            // the store lives in this process: let every rank finish its init reads before it goes away
            awaitStarted(joined.store(), namespace, joined.worldSize(), config);
        }
        closeQuietly(joined.store());
        closeQuietly(joined.owned());
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
