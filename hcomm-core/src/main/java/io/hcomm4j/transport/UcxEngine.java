package io.hcomm4j.transport;

import io.hcomm4j.HcommException;
import io.hcomm4j.ucx.UcpContext;
import io.hcomm4j.ucx.UcpWorker;
import io.hcomm4j.ucx.UcxException;
import java.nio.channels.Selector;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX side of one transport ({@code HCOMM_TRANSPORT=ucx}): a UCP context and one worker, which every
 * {@link UcxConduit} of this process sends and receives through. The progress engine polls it beside its rings
 * (the worker, then each link) and arms it before it blocks in its selector. A Java selector cannot wait on the
 * worker's event descriptor, so a waiter thread does: it sleeps until the engine arms the worker, blocks in
 * {@code poll(2)} on the descriptor, and wakes the selector when UCX has something. That costs a second wake-up
 * (tens of µs here) only after the engine's whole spin found nothing.
 */
final class UcxEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(UcxEngine.class);
    /** The waiter's longest poll: it looks at {@link #closed} at least this often. */
    private static final int WAIT_SLICE_MS = 100;

    private final int rank;
    private final UcpContext context;
    final UcpWorker worker;
    /** This worker's address, sent to peers in the hello. */
    final byte[] address;
    final Selector selector;
    private final Object linkLock = new Object();
    private volatile UcxConduit[] conduits = new UcxConduit[0];
    /** Endpoints given out whose conduits are not added yet (under {@link #linkLock}). */
    private int pending;
    /** Closed links whose endpoints the poller closes at its next pass (see {@link UcxConduit#finish}). */
    private final java.util.concurrent.ConcurrentLinkedQueue<UcxConduit> retired = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final Thread waiter;
    /** Large messages sent and received through UCX's tag matching (diagnostics, tests). */
    final java.util.concurrent.atomic.AtomicLong taggedSends = new java.util.concurrent.atomic.AtomicLong();
    final java.util.concurrent.atomic.AtomicLong taggedReceives = new java.util.concurrent.atomic.AtomicLong();
    /** Large messages whose buffers lie in the pool's registered mappings (their registration named to UCX). */
    final java.util.concurrent.atomic.AtomicLong registeredTransfers = new java.util.concurrent.atomic.AtomicLong();
    /** The memory pool whose mappings are registered ahead of use, and the registrations; or null. */
    private volatile io.hcomm4j.memory.MemoryPool pool;
    private volatile UcxRegistrations registrations;
    /** Puts, gets, atomics and flushes started through UCX ({@link UcxRemoteAccess#counted}). */
    final java.util.concurrent.atomic.AtomicLong oneSidedOps = new java.util.concurrent.atomic.AtomicLong();
    /** UCX requests whose completion someone waits for ({@link #watch}); added from any thread. */
    private final java.util.concurrent.ConcurrentLinkedQueue<Watched> watchedIn = new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** The watched requests the poller tests (poll token held). */
    private final java.util.ArrayList<Watched> watched = new java.util.ArrayList<>();
    /** Registered memory and remote keys to close before the worker if their owners have not (see {@link #keep}). */
    private final java.util.Set<AutoCloseable> kept = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private record Watched(io.hcomm4j.ucx.UcpRequest request, java.util.function.IntConsumer done) {
    }

    /** The engine blocks in its selector with the worker armed: the waiter waits on the descriptor meanwhile. */
    private volatile boolean armed;
    private volatile boolean closed;

    private UcxEngine(int rank, UcpContext context, UcpWorker worker, Selector selector) {
        this.rank = rank;
        this.context = context;
        this.worker = worker;
        this.selector = selector;
        this.address = worker.address();
        this.waiter = Thread.ofPlatform().daemon().name("hcomm-ucx-wait-" + rank).unstarted(this::runWaiter);
    }

    /**
     * Opens UCX for rank {@code rank} (settings from the {@code UCX_*} environment: {@code UCX_TLS},
     * {@code UCX_NET_DEVICES} ...), its waiter waking {@code selector}.
     *
     * @throws HcommException naming the library and the setting when UCX is missing, too old or refuses to start
     */
    static UcxEngine open(int rank, Selector selector) {
        UcpContext context = null;
        UcpWorker worker = null;
        try {
            Map<String, String> tuned = settings(System::getenv);
            try {
                context = UcpContext.open(tuned);
            } catch (UcxException e) {
                if (tuned.isEmpty()) throw e;
                // a UCX built without its TCP transport knows no TCP_ setting: its own defaults then
                LOG.debug("rank {}: UCX refused {} ({}); opening it with its defaults", rank, tuned, e.getMessage());
                context = UcpContext.open(Map.of());
            }
            worker = context.newWorker();
            UcxEngine e = new UcxEngine(rank, context, worker, selector);
            e.waiter.start();
            LOG.debug("rank {}: UCX worker open ({} B address, UCX_TLS={})", rank, e.address.length, System.getenv("UCX_TLS"));
            return e;
        } catch (UcxException e) {
            if (worker != null) worker.close();
            if (context != null) context.close();
            throw new HcommException("rank " + rank + ": HCOMM_TRANSPORT=ucx, but UCX cannot be used: " + e.getMessage(), e);
        }
    }

    /**
     * The settings this transport gives UCX over the environment's ({@code env}: the process's), each only where the
     * user set no value of their own. UCX's TCP reads in 256 KiB segments, not 64 KiB ({@code UCX_TCP_RX_SEG_SIZE}: a
     * quarter of the reads for a large message), where UCX may use TCP. With UCX's TCP alone ({@code UCX_TLS} naming only
     * {@code tcp} and {@code self}), no rendezvous ({@code RNDV_THRESH=inf}): over TCP it buys no zero copy, only a
     * handshake per message above 8 KiB (UCX's threshold there), which every frame and large message above that paid.
     * docs/performance.md, "UCX", has the figures.
     */
    static Map<String, String> settings(java.util.function.UnaryOperator<String> env) {
        Map<String, String> s = new java.util.TreeMap<>();
        String tls = env.apply("UCX_TLS");
        // an interface setting reaches UCX without its prefix (TCP_), and is refused, loudly, where no interface takes
        // it: only where UCX's TCP may be opened
        if (env.apply("UCX_TCP_RX_SEG_SIZE") == null && mayUseTcp(tls)) s.put("RX_SEG_SIZE", "256K");
        if (tls != null && env.apply("UCX_RNDV_THRESH") == null
                && java.util.Arrays.stream(tls.split(",")).map(String::strip).allMatch(t -> t.equals("tcp") || t.equals("self"))) {
            s.put("RNDV_THRESH", "inf");
        }
        return s;
    }

    /** Whether {@code UCX_TLS} (null: unset, UCX's choice) lets UCX open its TCP transport. */
    private static boolean mayUseTcp(String tls) {
        if (tls == null) return true;
        String t = tls.strip();
        java.util.List<String> names = java.util.Arrays.stream(t.replaceFirst("^\\^", "").split(",")).map(String::strip).toList();
        boolean named = names.contains("tcp") || names.contains("all");
        return t.startsWith("^") ? !names.contains("tcp") : named;
    }

    /**
     * An endpoint to the worker at {@code peerAddress} (see {@link io.hcomm4j.ucx.UcpWorker#connectWithPeerErrorsIfPossible}),
     * or null once this engine is closed: a connection made late (a notice's background connect while the session
     * closes) must not touch a destroyed worker. Each endpoint given out is pending until its conduit is
     * {@link #add added} or {@link #abandoned}; {@link #close} waits for those.
     */
    io.hcomm4j.ucx.UcpEndpoint connect(byte[] peerAddress) {
        synchronized (linkLock) {
            if (closed) return null;
            io.hcomm4j.ucx.UcpEndpoint ep = worker.connectWithPeerErrorsIfPossible(peerAddress);
            pending++;
            return ep;
        }
    }

    /** A conduit whose endpoint {@link #connect} gave out will not be added (it failed before it started). */
    void abandoned() {
        synchronized (linkLock) {
            pending--;
            linkLock.notifyAll();
        }
    }

    void add(UcxConduit c) {
        synchronized (linkLock) {
            UcxConduit[] cs = java.util.Arrays.copyOf(conduits, conduits.length + 1);
            cs[cs.length - 1] = c;
            conduits = cs;
            pending--;
            linkLock.notifyAll();
        }
        selector.wakeup(); // a poller about to block must look at the new link too
    }

    void remove(UcxConduit c) {
        synchronized (linkLock) {
            conduits = java.util.Arrays.stream(conduits).filter(x -> x != c).toArray(UcxConduit[]::new);
        }
    }

    /** {@code c} is closed: off the polled links, its endpoint closed at the poller's next pass. */
    void retire(UcxConduit c) {
        remove(c);
        retired.add(c);
        selector.wakeup();
    }

    private void finishRetired() {
        UcxConduit c;
        while ((c = retired.poll()) != null) c.finish();
    }

    /** Registers {@code p}'s mappings with UCX now and as it makes them, until this engine closes. */
    void registerPool(io.hcomm4j.memory.MemoryPool p) {
        UcxRegistrations r = new UcxRegistrations(rank, context);
        registrations = r;
        pool = p;
        p.setMappingListener(r);
    }

    /**
     * A buffer of at least {@code bytes} from the registered pool, or null (no pool, or it is at its limit or closed):
     * native room for a heap array's bytes that UCX must read, without an arena of its own per message (a shared
     * arena's close is a handshake with every thread).
     */
    io.hcomm4j.memory.Buffer borrow(long bytes) {
        io.hcomm4j.memory.MemoryPool p = pool;
        if (p == null || p.isClosed()) return null;
        try {
            return p.allocate(bytes);
        } catch (RuntimeException e) {
            return null; // its limit, or it closed meanwhile: an arena of the message's own then
        }
    }

    /** The registration of the pool mapping that holds {@code [address, address + length)}, or null. */
    io.hcomm4j.ucx.UcpMemory registered(long address, long length) {
        UcxRegistrations r = registrations;
        return r == null ? null : r.holding(address, length);
    }

    /** How many pool mappings are registered with UCX now. */
    int registeredMappings() {
        UcxRegistrations r = registrations;
        return r == null ? 0 : r.count();
    }

    /** {@link UcxRemoteAccess#map}. */
    io.hcomm4j.ucx.UcpMemory map(java.lang.foreign.MemorySegment segment) {
        return context.map(segment);
    }

    /** {@link UcxRemoteAccess#watch}. */
    void watch(io.hcomm4j.ucx.UcpRequest request, java.util.function.IntConsumer done) {
        if (request.test()) {
            int status = request.status();
            request.close();
            done.accept(status);
            return;
        }
        watchedIn.add(new Watched(request, done));
        if (closed) completeWatched(); // the poller is gone: UCX will not complete it
        else selector.wakeup(); // a poller about to block must test it too
    }

    /** Tests the watched requests and completes the finished ones (poll token held); how many finished. */
    private int pollWatched() {
        Watched w;
        while ((w = watchedIn.poll()) != null) watched.add(w);
        int n = 0;
        for (int i = watched.size() - 1; i >= 0; i--) {
            Watched x = watched.get(i);
            if (!x.request.test()) continue;
            watched.set(i, watched.get(watched.size() - 1));
            watched.remove(watched.size() - 1);
            finishWatched(x, x.request.status());
            n++;
        }
        return n;
    }

    private static void finishWatched(Watched x, int status) {
        x.request.close();
        try {
            x.done.accept(status);
        } catch (RuntimeException e) {
            LOG.warn("a UCX completion failed", e);
        }
    }

    /** At close: whatever is still watched completes as canceled (its request freed). */
    private synchronized void completeWatched() {
        Watched w;
        while ((w = watchedIn.poll()) != null) watched.add(w);
        for (Watched x : watched) finishWatched(x, x.request.test() ? x.request.status() : STATUS_CANCELED);
        watched.clear();
    }

    /** UCS_ERR_CANCELED. */
    static final int STATUS_CANCELED = -16;

    void keep(AutoCloseable resource) {
        kept.add(resource);
    }

    void release(AutoCloseable resource) {
        kept.remove(resource);
    }

    String statusText(int status) {
        return worker.statusText(status);
    }

    /** How many links go through UCX (their sockets are the selector's only other keys). */
    int links() {
        return conduits.length;
    }

    /**
     * A spin poll (poll token held): progresses the worker once, then hands every link with work to its reader; returns
     * how many. Once, not again while progress finds something: over TCP each call is a poll of UCX's sockets (a system
     * call), and a second one before the reader ran put it between a message's arrival and its reading (an 8 B to
     * 4 KiB ping-pong took 0.4-0.6 us more one way with up to 4 calls; docs/performance.md, "UCX").
     */
    int poll() {
        if (!retired.isEmpty()) finishRetired();
        worker.progress();
        int n = watched.isEmpty() && watchedIn.isEmpty() ? 0 : pollWatched();
        for (UcxConduit c : conduits) {
            n += c.pollTagged();
            if (c.ready()) {
                n++;
                c.link.onReady(c.writeWanted(), true);
            }
        }
        return n;
    }

    /**
     * Before the engine blocks: drains the worker, arms its descriptor and lets the waiter wait on it; true if there is
     * work after all (then the engine must not block).
     */
    boolean arm() {
        try {
            for (int i = 0; i < 16 && worker.progress() > 0; i++) {
                // what came before the arm is handled now
            }
            if ((!watched.isEmpty() || !watchedIn.isEmpty()) && pollWatched() > 0) return true;
            for (UcxConduit c : conduits) {
                if (c.pollTagged() > 0 || c.ready()) return true;
            }
            if (!worker.arm()) return true;
        } catch (UcxException e) {
            LOG.warn("rank {}: UCX worker: {}", rank, e.getMessage());
            return false;
        }
        armed = true;
        LockSupport.unpark(waiter);
        return false;
    }

    /** The engine woke up: the waiter goes back to sleep after its current poll. */
    void disarm() {
        armed = false;
    }

    private void runWaiter() {
        while (!closed) {
            if (!armed) {
                LockSupport.park(this);
                continue;
            }
            boolean event;
            try {
                event = worker.awaitEventFd(WAIT_SLICE_MS);
            } catch (UcxException e) {
                if (!closed) LOG.warn("rank {}: waiting on UCX's event descriptor: {}", rank, e.getMessage());
                LockSupport.parkNanos(WAIT_SLICE_MS * 1_000_000L);
                continue;
            }
            if (event && armed) {
                armed = false;
                selector.wakeup();
            }
        }
    }

    /** Stops the waiter and closes the worker and the context (after every link closed its endpoint). */
    @Override
    public void close() {
        synchronized (linkLock) {
            if (closed) return;
            closed = true; // no endpoint is made from here on (connect, under the same lock)
            // conduits being installed right now are added (and closed below with the others) before the worker goes
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (pending > 0 && System.nanoTime() - deadline < 0) {
                try {
                    linkLock.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        LockSupport.unpark(waiter);
        try {
            worker.signal();
            waiter.join(5_000);
        } catch (UcxException e) {
            LOG.debug("signal at close", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (UcxConduit c : conduits) c.close();
        finishRetired();
        for (int i = 0; i < 16 && worker.progress() > 0; i++) {
            // requests the closed endpoints failed complete now
        }
        completeWatched();
        for (AutoCloseable r : kept) {
            try {
                r.close();
            } catch (Exception e) {
                LOG.warn("rank {}: closing {} left open: {}", rank, r, e.toString());
            }
        }
        kept.clear();
        io.hcomm4j.memory.MemoryPool p = pool;
        if (p != null) p.setMappingListener(null);
        UcxRegistrations r = registrations;
        if (r != null) r.close();
        worker.close();
        context.close();
    }
}
