package io.hcomm4j.comm;

import io.hcomm4j.CommConfig;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.Communicator;
import io.hcomm4j.bootstrap.Bootstrap;
import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.memory.MemoryPool;
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
 * How a {@link Session} comes about: init (a rendezvous through the store: every rank publishes its data address under a
 * per-init namespace and waits until all have, so a session is usable once {@link #open} returns) and join (a
 * replacement process taking a failed rank's slot, see {@link Membership}).
 */
final class SessionStart {
    private static final Logger LOG = LoggerFactory.getLogger(Session.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private SessionStart() {
    }

    /** The transport's settings from {@code config}: the same for a rank at init and for a replacement joining. */
    private static TransportOptions transportOptions(CommConfig config) {
        return new TransportOptions(config.timeout(), config.initTimeout(), config.spinTime(), config.eagerLimit(),
                config.unexpectedLimit(), config.heartbeatTimeout(), config.heartbeatInterval(), config.retryMax(),
                config.retryInterval(), io.hcomm4j.transport.TransportLimits.of(config));
    }

    private static MemoryPool openPool(CommConfig config, Path shmDir) {
        return MemoryPool.open(new MemoryPool.Options(shmDir, config.memPoolMax(), config.memDebug(), config.memAdopt()));
    }

    /** Runs init: rendezvous through the store, data listener, world communicator (then HCOMM_TUNE_AT_INIT's probe). */
    static Session open(CommConfig config) {
        Session s = rendezvous(config);
        try {
            SessionTuning.measureAtInit(config, s.tuner(), s.world());
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
        DebugReport.atInit(s);
        return s;
    }

    private static Session rendezvous(CommConfig config) {
        long start = System.nanoTime();
        Bootstrap.Joined j = Bootstrap.join(config);
        PeerTransport t = null;
        MemoryPool pool = null;
        try {
            // first, so that files a killed job left in the directory are gone before this session creates any
            Path shmDir = Path.of(config.shmDir());
            pool = openPool(config, shmDir);
            Store store = j.store();
            int rank = j.rank();
            int size = j.worldSize();
            Duration initTimeout = config.initTimeout();
            // every init on one store gets its own namespace: the k-th init of rank r uses generation k
            long generation = store.add("hcomm/generation/" + rank, 1);
            String ns = "hcomm/" + generation + "/";
            if (rank == 0) {
                store.set(ns + "size", String.valueOf(size).getBytes(StandardCharsets.UTF_8));
                store.set(ns + "token", ByteBuffer.allocate(8).putLong(RANDOM.nextLong()).array());
            }
            long token = ByteBuffer.wrap(store.get(ns + "token", initTimeout)).getLong();
            io.hcomm4j.algo.TuningTable table = SessionTuning.load(config, rank);
            TransportOptions options = transportOptions(config);
            t = PeerTransport.open(rank, size, j.dataAddress(), Bootstrap.auth(config), token, options);
            t.tcpCongestion(config.tcpCongestion().orElse(null));
            InetSocketAddress me = t.listenAddress();
            RailAddresses.enable(t, config);
            String host = config.hostId().orElseGet(() -> HostIdentity.of(shmDir));
            // the fourth field says whether this rank takes part in zero-copy collectives: every rank must agree on it
            String zc = config.transport().sharedMemoryWithinHost() && config.zeroCopy() ? "zc" : "-";
            // the fifth: the CPUs this process may use, so the ranks of a host know whether they have a CPU each
            String cpus = CpuSet.own();
            // the sixth: the tuning table's fingerprint, which every rank must share
            // the seventh: where this rank listens on its further interfaces (HCOMM_SOCKET_IFNAME=a,b), for the rails
            store.set(ns + "addr/" + rank, (me.getAddress().getHostAddress() + " " + me.getPort() + " " + host + " " + zc
                    + " " + (cpus == null ? "-" : cpus) + " " + SessionTuning.field(table) + " " + RailAddresses.field(t))
                    .getBytes(StandardCharsets.UTF_8));
            store.add(ns + "joined", 1); // a count for `hcomm status`; init itself waits for the addresses
            // Wait for every rank's address rather than for a "last one in" flag: the keys each rank wrote are all it
            // takes, so a store that restarts meanwhile is whole again once every rank has written its own back
            // (TcpStore does that), whereas a counter's "last one" may never see its number again after a restart.
            List<String> addrKeys = new java.util.ArrayList<>(size);
            for (int p = 0; p < size; p++) addrKeys.add(ns + "addr/" + p);
            try {
                store.await(addrKeys, initTimeout);
            } catch (CommTimeoutException e) {
                // no further store call here: the store may be the problem, and its message says which keys are missing
                throw new CommTimeoutException("rank " + rank + ": init: not all " + size + " ranks joined within " + initTimeout
                        + " (HCOMM_INIT_TIMEOUT; the missing addr/<rank> keys are the ranks that did not): " + e.getMessage());
            }
            InetSocketAddress[] book = new InetSocketAddress[size];
            List<List<InetSocketAddress>> railBook = new java.util.ArrayList<>(size);
            boolean[] sameHost = new boolean[size];
            String[] hostIds = new String[size];
            boolean[] zeroCopyRanks = new boolean[size];
            List<Integer> elsewhere = new java.util.ArrayList<>();
            List<String> localCpus = new java.util.ArrayList<>();
            String[] tables = new String[size];
            for (int p = 0; p < size; p++) {
                String[] hp = new String(store.get(ns + "addr/" + p, initTimeout), StandardCharsets.UTF_8).split(" ");
                book[p] = new InetSocketAddress(hp[0], Integer.parseInt(hp[1]));
                // a rank that published no host id is a host of its own (a space cannot occur in an id)
                hostIds[p] = hp.length > 2 ? hp[2] : "rank " + p;
                zeroCopyRanks[p] = hp.length > 3 && hp[3].equals("zc");
                sameHost[p] = p != rank && hp.length > 2 && hp[2].equals(host);
                if (p != rank && !sameHost[p]) elsewhere.add(p);
                if (p == rank || sameHost[p]) localCpus.add(hp.length > 4 && !hp[4].equals("-") ? hp[4] : null);
                tables[p] = hp.length > 5 ? hp[5] : SessionTuning.NONE;
                railBook.add(hp.length > 6 ? RailAddresses.parse(hp[6]) : List.of());
            }
            int local = localCpus.size();
            t.oversubscribed(CpuSet.oversubscribed(local, localCpus, Runtime.getRuntime().availableProcessors()));
            store.add(ns + "started", 1);
            String tablesDiffer = SessionTuning.disagreement(rank, tables, table);
            if (tablesDiffer != null) {
                if (j.owned() != null) awaitStarted(store, ns, size, config);
                throw new HcommException(tablesDiffer);
            }
            if (config.transport() == CommConfig.Transport.SHM && !elsewhere.isEmpty()) {
                // every rank fails the same way; the store's host lets the others read the addresses first
                if (j.owned() != null) awaitStarted(store, ns, size, config);
                throw new HcommException("rank " + rank + ": HCOMM_TRANSPORT=shm, but ranks " + elsewhere + " are on other hosts "
                        + "(host id here " + host + "; see HCOMM_HOST_ID); use HCOMM_TRANSPORT=auto or tcp");
            }
            enableTransports(t, config, shmDir, sameHost, pool);
            Session.Events events = new Session.Events();
            t.setEvents(events);
            t.setRailBook(railBook::get);
            t.start(p -> book[p]);
            Session s = new Session(config, j, ns, t, pool, events, book, sameHost, hostIds, host, 0L, null, zeroCopyRanks, table);
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

    /**
     * A replacement process joins the running job whose store {@code config} names (its latest session, the namespace
     * rank 0 took last): it registers as a joiner, waits (up to {@code HCOMM_INIT_TIMEOUT}) until the running ranks call
     * {@link Communicator#grow} and assign it a failed rank's world slot, opens its transport in that slot with a new
     * incarnation, publishes its address, and returns once every old member has taken it in. Its {@link #world()} is the
     * grown communicator.
     */
    static Session join(CommConfig config) {
        // the prologue mirrors open's (another Bootstrap entry, then the same pool and store): kept apart so each reads whole
        long start = System.nanoTime();
        Bootstrap.Joined j = Bootstrap.joinAsReplacement(config);
        PeerTransport t = null;
        MemoryPool pool = null;
        try {
            Path shmDir = Path.of(config.shmDir());
            pool = openPool(config, shmDir);
            Store store = j.store();
            Duration initTimeout = config.initTimeout();
            String ns = "hcomm/" + text(store.get("hcomm/generation/0", initTimeout)) + "/";
            int size = Integer.parseInt(text(store.get(ns + "size", initTimeout)));
            long token = ByteBuffer.wrap(store.get(ns + "token", initTimeout)).getLong();
            long ticket = store.add(ns + "grow/joiners", 1);
            byte[] round;
            try {
                round = store.get(ns + "grow/ticket/" + ticket, initTimeout);
            } catch (CommTimeoutException e) {
                throw new CommTimeoutException("join: no running rank called grow for this process (joiner #" + ticket + " of "
                        + ns + ") within " + io.hcomm4j.Units.duration(initTimeout) + " (HCOMM_INIT_TIMEOUT)");
            }
            String g = text(round);
            GrowPlan plan = GrowPlan.decode(store.get(ns + "grow/" + g + "/plan", initTimeout));
            if (plan.error() != null) throw new HcommException("join: the running ranks could not grow: " + plan.error());
            int me = plan.joinerIndex(ticket);
            int slot = plan.slots()[me];
            // the replacement's links are reliable like everyone's (a link is only if both sides say so in the hello)
            TransportOptions options = transportOptions(config);
            t = PeerTransport.open(slot, size, j.dataAddress(), Bootstrap.auth(config), token, options);
            t.tcpCongestion(config.tcpCongestion().orElse(null));
            t.incarnation(slot, plan.incarnations()[me]);
            for (int p = 0; p < size; p++) {
                if (p == slot) continue;
                if (plan.isMember(p)) {
                    byte[] inc = store.tryGet(ns + "incarnation/" + p);
                    if (inc != null) t.incarnation(p, Long.parseLong(text(inc)));
                } else {
                    t.assumeFailed(p, "failed before this process joined in its place of rank " + slot);
                }
            }
            InetSocketAddress mine = t.listenAddress();
            String host = config.hostId().orElseGet(() -> HostIdentity.of(shmDir));
            store.set(ns + "addr/" + slot, (mine.getAddress().getHostAddress() + " " + mine.getPort() + " " + host).getBytes(StandardCharsets.UTF_8));
            InetSocketAddress[] book = new InetSocketAddress[size];
            boolean[] sameHost = new boolean[size];
            String[] hostIds = new String[size];
            java.util.Arrays.fill(hostIds, "failed");
            boolean[] zeroCopyRanks = new boolean[size]; // a replacement takes no part in zero-copy collectives
            Session.Events events = new Session.Events();
            t.setEvents(events);
            enableTransports(t, config, shmDir, sameHost, pool);
            for (int p : plan.members()) {
                // the other joiners' addresses are new: read them once they are published
                if (p != slot && plan.joinerIndex(ticketOf(plan, p)) < 0) readAddress(store, ns, p, host, book, sameHost, hostIds, zeroCopyRanks, initTimeout);
            }
            hostIds[slot] = host;
            t.start(p -> book[p], false);
            store.set(ns + "grow/" + g + "/ready/" + slot, new byte[] {1});
            for (int i = 0; i < plan.slots().length; i++) {
                int p = plan.slots()[i];
                if (p == slot) continue;
                store.get(ns + "grow/" + g + "/ready/" + p, initTimeout);
                readAddress(store, ns, p, host, book, sameHost, hostIds, zeroCopyRanks, initTimeout);
            }
            // every old member has taken this process in (before, it would refuse a connection from this slot)
            int old = plan.members().length - plan.slots().length;
            long deadline = System.nanoTime() + initTimeout.toNanos();
            while (true) {
                byte[] v = store.tryGet(ns + "grow/" + g + "/revived");
                if (v != null && Long.parseLong(text(v)) >= old) break;
                if (System.nanoTime() > deadline) {
                    throw new CommTimeoutException("join: not every running rank took this process in within " + io.hcomm4j.Units.duration(initTimeout) + " (HCOMM_INIT_TIMEOUT)");
                }
                Thread.sleep(2);
            }
            t.connectNeighbourNow();
            Bootstrap.Joined as = new Bootstrap.Joined(slot, size, store, j.dataAddress(), null);
            // a joiner loads its own table without comparing it: the running ranks' fingerprints are in their addresses,
            // but they chose their algorithms long ago, and a replacement started from the same job spec has the same file
            Session s = new Session(config, as, ns, t, pool, events, book, sameHost, hostIds, host, plan.id(), plan.members(),
                    zeroCopyRanks, SessionTuning.load(config, slot));
            LOG.debug("rank {}/{}: joined in {} ms as incarnation {}", slot, size, (System.nanoTime() - start) / 1_000_000, plan.incarnations()[me]);
            DebugReport.atInit(s);
            return s;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (t != null) t.close();
            if (pool != null) pool.close();
            closeQuietly(j.store());
            throw new HcommException("join: interrupted", e);
        } catch (RuntimeException e) {
            if (t != null) t.close();
            if (pool != null) pool.close();
            closeQuietly(j.store());
            throw e;
        }
    }

    /**
     * UCX for {@code ucx} and {@code auto-ucx}; shared memory to the ranks of this host ({@code sameHost}, filled in as
     * their addresses are read) for every mode but {@code tcp} and {@code ucx}. With both, a same-host pair takes the
     * rings and the others UCX (the hello offers both; the acceptor prefers the mapping).
     */
    private static void enableTransports(PeerTransport t, CommConfig config, Path shmDir, boolean[] sameHost, MemoryPool pool) {
        CommConfig.Transport mode = config.transport();
        if (mode.usesUcx()) t.enableUcx(pool);
        if (mode.sharedMemoryWithinHost()) t.enableShm(new ShmOptions(shmDir, (int) config.shmRingSize(), p -> sameHost[p], pool));
    }

    private static long ticketOf(GrowPlan plan, int slot) {
        for (int i = 0; i < plan.slots().length; i++) if (plan.slots()[i] == slot) return plan.tickets()[i];
        return -1;
    }

    static void readAddress(Store store, String ns, int p, String host, InetSocketAddress[] book, boolean[] sameHost,
                                    String[] hostIds, boolean[] zeroCopyRanks, Duration timeout) {
        String[] hp = text(store.get(ns + "addr/" + p, timeout)).split(" ");
        book[p] = new InetSocketAddress(hp[0], Integer.parseInt(hp[1]));
        hostIds[p] = hp.length > 2 ? hp[2] : "rank " + p;
        sameHost[p] = hp.length > 2 && hp[2].equals(host);
        // a replacement (grow) publishes no zero-copy flag: communicators with it keep to the transport on every rank
        zeroCopyRanks[p] = hp.length > 3 && hp[3].equals("zc");
    }

    private static String text(byte[] v) {
        return new String(v, StandardCharsets.UTF_8);
    }

    /** Waits (bounded) until every rank has read the addresses: the store may go away after that. */
    static void awaitStarted(Store store, String namespace, int size, CommConfig config) {
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

    static void closeQuietly(AutoCloseable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (Exception e) {
            LOG.debug("close failed", e);
        }
    }
}
