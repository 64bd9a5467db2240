package io.hcomm4j.rma;

import io.hcomm4j.CommAbortedException;
import io.hcomm4j.CommConfig;
import io.hcomm4j.HcommException;
import io.hcomm4j.Memory;
import io.hcomm4j.Notification;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.RemoteEngine;
import io.hcomm4j.SegmentDescriptor;
import io.hcomm4j.TransferBatch;
import io.hcomm4j.TransferConfig;
import io.hcomm4j.TransferEngine;
import io.hcomm4j.TransferOp;
import io.hcomm4j.bootstrap.Bootstrap;
import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.transport.HostIdentity;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.ShmOptions;
import io.hcomm4j.transport.TransportOptions;
import io.hcomm4j.transport.SendRequest;
import io.hcomm4j.transport.TransportEvents;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A transfer engine: a {@link PeerTransport} of its own whose ranks are engine slots (handed out by the job's store,
 * never twice; the address book is the store's, see {@link EngineDirectory}), so connecting, authentication, the
 * shared-memory rings, reconnects, heartbeats and failure detection are the communicators' own. Segments registered
 * here are served by its {@link EngineTarget} on the progress engine; batches go out through {@link EngineTransfers}.
 * The transport keeps no ring of neighbour connections (slots come and go): a failure reaches the engines connected to
 * the one that noticed it, and every engine notices the failure of those it is connected to itself.
 */
public final class EngineImpl implements TransferEngine {
    private static final Logger LOG = LoggerFactory.getLogger(EngineImpl.class);

    private final Store store;
    private final EngineDirectory directory;
    private final MemoryPool pool;
    private final PeerTransport transport;
    private final EngineTarget target;
    private final EngineTransfers transfers;
    private final EngineDirectory.Entry me;
    private final boolean shm;
    private final long timeoutNanos;
    private final ConcurrentHashMap<Integer, EnginePeer> peers = new ConcurrentHashMap<>();
    private final Set<EngineBatch> active = ConcurrentHashMap.newKeySet();
    private final AtomicLong segmentIds = new AtomicLong();
    private final ExecutorService copier = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("hcomm-xfer-copy-", 0).factory());
    private final AtomicBoolean closed = new AtomicBoolean();

    private EngineImpl(Store store, EngineDirectory directory, MemoryPool pool, PeerTransport transport, EngineDirectory.Entry me,
                       boolean shm, long timeoutNanos, int slots) {
        this.store = store;
        this.directory = directory;
        this.pool = pool;
        this.transport = transport;
        this.me = me;
        this.shm = shm;
        this.timeoutNanos = timeoutNanos;
        this.target = new EngineTarget(transport, me.name(), slots);
        this.transfers = new EngineTransfers(this, transport, target, directory, copier);
    }

    /** See {@link TransferEngine#start(TransferConfig)}. */
    static EngineImpl start(TransferConfig config) {
        CommConfig c = config.comm();
        // the store as a replacement process reaches it: found like init finds it, never served here (engines come and go)
        Bootstrap.Joined j = Bootstrap.joinAsReplacement(c);
        Store store = j.store();
        MemoryPool pool = null;
        PeerTransport t = null;
        try {
            Path shmDir = Path.of(c.shmDir());
            pool = MemoryPool.open(new MemoryPool.Options(shmDir, c.memPoolMax(), c.memDebug()));
            EngineDirectory dir = new EngineDirectory(store);
            long token = dir.token();
            int slots = dir.slots(config.slots());
            int slot = dir.takeSlot(slots);
            String name = config.name().orElse("engine-" + slot);
            t = PeerTransport.open(slot, slots, j.dataAddress(), Bootstrap.auth(c), token, options(c));
            t.withoutNeighbourRing();
            String host = c.hostId().orElseGet(() -> HostIdentity.of(shmDir));
            // HCOMM_TRANSPORT=ucx: the transfer engine goes over TCP (UCX RMA for it is to come); auto-ucx: TCP between hosts
            boolean shm = c.transport().sharedMemoryWithinHost();
            if (shm) t.enableShm(new ShmOptions(shmDir, (int) c.shmRingSize(), p -> dir.onHost(p, host), pool));
            EngineDirectory.Entry me = new EngineDirectory.Entry(slot, name, t.listenAddress(), host);
            EngineImpl e = new EngineImpl(store, dir, pool, t, me, shm, c.timeout().toNanos(), slots);
            t.setEvents(e.new Events());
            t.setRmaHandler(e.target);
            t.start(dir::address, false);
            dir.publish(me);
            LOG.debug("engine '{}' (slot {} of {}) listening on {}", name, slot, slots, me.address());
            return e;
        } catch (RuntimeException e) {
            if (t != null) t.close();
            if (pool != null) pool.close();
            store.close();
            throw e;
        }
    }

    private static TransportOptions options(CommConfig c) {
        return new TransportOptions(c.timeout(), c.initTimeout(), c.spinTime(), c.eagerLimit(), c.unexpectedLimit(),
                c.heartbeatTimeout(), c.heartbeatInterval(), c.retryMax(), c.retryInterval(), io.hcomm4j.transport.TransportLimits.of(c));
    }

    /** Failures end the batches to the failed engine at once; the watchdog's tick ends batches past their deadline. */
    private final class Events implements TransportEvents {
        @Override
        public void peerFailed(int slot, String why) {
            for (EngineBatch b : active) {
                if (b.slot() == slot) b.fail(transfers.failure(b, transport.failure(slot, "transfer")));
            }
        }

        @Override
        public void declaredFailed(int by, String why) {
            LOG.error("engine '{}': engine slot {} declared this engine failed ({}): transfers with the engines connected to "
                    + "it will fail; close this engine and start a new one", me.name(), by, why);
        }

        @Override
        public void tick(long now) {
            for (EngineBatch b : active) {
                if (now - b.deadline >= 0) b.timeOut();
                else if (b.slot() != me.slot() && transport.failed(b.slot())) b.fail(transfers.failure(b, transport.failure(b.slot(), "transfer")));
            }
        }
    }

    EngineBatch newBatch(RemoteEngine remote, int size, long bytes, long timeout) {
        EngineBatch b = new EngineBatch(this, transport, remote, size, bytes, timeout);
        active.add(b);
        if (closed.get()) b.fail(closedError("transfer"));
        return b;
    }

    /** Batch {@code b} is over; the replies {@code awaited} it still waited for are dropped when they come. */
    void ended(EngineBatch b, List<Integer> awaited) {
        active.remove(b);
        target.forget(awaited);
    }

    // ------------------------------------------------------------------------------------ API

    @Override
    public String name() {
        return me.name();
    }

    @Override
    public int id() {
        return me.slot();
    }

    @Override
    public InetSocketAddress address() {
        return me.address();
    }

    @Override
    public Memory memory() {
        return pool;
    }

    @Override
    public SegmentDescriptor register(MemorySegment segment, String name) {
        checkOpen("register");
        Objects.requireNonNull(segment, "segment");
        TransferConfig.checkName(name, "name");
        if (segment.isReadOnly()) throw new IllegalArgumentException(what("register '" + name + "'") + "segment is read-only");
        if (!transport.usableFromAnyThread(segment)) {
            throw new IllegalArgumentException(what("register '" + name + "'") + "segment is confined to one thread; the progress "
                    + "engine must reach it (use a heap segment, or a global, shared or automatic arena)");
        }
        long[] at = {-1, 0};
        if (shm && segment.byteSize() > 0 && !pool.locate(segment, segment.byteSize(), at)) at[0] = -1;
        InetSocketAddress a = me.address();
        SegmentDescriptor d = new SegmentDescriptor(me.name(), me.slot(), a.getAddress().getHostAddress(), a.getPort(), me.hostId(),
                name, segmentIds.incrementAndGet(), segment.byteSize(), at[0], at[0] < 0 ? 0 : at[1]);
        EngineTarget.Local l = new EngineTarget.Local(name, d.segmentId(), segment, d);
        if (target.byName.putIfAbsent(name, l) != null) {
            throw new IllegalArgumentException(what("register") + "name '" + name + "' is registered already (unregister it first)");
        }
        target.add(l);
        try {
            directory.publishSegment(d);
        } catch (RuntimeException e) {
            target.byName.remove(name, l);
            target.remove(l);
            throw e;
        }
        return d;
    }

    @Override
    public void unregister(String name) {
        checkOpen("unregister");
        Objects.requireNonNull(name, "name");
        EngineTarget.Local l = target.byName.remove(name);
        if (l == null) throw new IllegalArgumentException(what("unregister") + "name '" + name + "': no segment of that name is registered here");
        target.remove(l);
        directory.withdrawSegment(l.descriptor());
    }

    @Override
    public List<SegmentDescriptor> segments() {
        List<SegmentDescriptor> out = new ArrayList<>();
        for (EngineTarget.Local l : target.byName.values()) out.add(l.descriptor());
        return out;
    }

    @Override
    public RemoteEngine connect(String engine, Duration timeout) {
        checkOpen("connect");
        TransferConfig.checkName(engine, "engine");
        long deadline = deadline(timeout);
        int slot = directory.resolve(engine, timeout);
        EngineDirectory.Entry e = directory.entry(slot);
        if (e == null) {
            throw new PeerFailedException(what("connect") + "engine '" + engine + "' (id " + slot + ") left", List.of(slot), null);
        }
        return connect(e, deadline);
    }

    @Override
    public RemoteEngine connect(SegmentDescriptor descriptor, Duration timeout) {
        checkOpen("connect");
        Objects.requireNonNull(descriptor, "descriptor");
        long deadline = deadline(timeout);
        if (descriptor.engineId() >= transport.worldSize()) {
            throw new IllegalArgumentException(what("connect") + "descriptor names engine id " + descriptor.engineId()
                    + ", beyond this job's " + transport.worldSize() + " engine slots (a descriptor of another job?)");
        }
        // the store's entry, if it has one, must be the engine the descriptor names (else it is another job's descriptor)
        EngineDirectory.Entry e = directory.entry(descriptor.engineId());
        InetSocketAddress at = new InetSocketAddress(descriptor.host(), descriptor.port());
        if (e != null && !e.address().equals(at)) {
            throw new IllegalArgumentException(what("connect") + "descriptor names engine '" + descriptor.engine() + "' (id "
                    + descriptor.engineId() + ") at " + at + ", but this job's engine " + descriptor.engineId() + " is '" + e.name()
                    + "' at " + e.address() + " (a descriptor of another job?)");
        }
        if (e == null) {
            directory.learn(descriptor);
            e = directory.entry(descriptor.engineId());
        }
        RemoteEngine r = connect(e, deadline);
        if (r.id() != me.slot()) peers.get(r.id()).remember(descriptor);
        return r;
    }

    private RemoteEngine connect(EngineDirectory.Entry e, long deadline) {
        int slot = e.slot();
        if (slot != me.slot()) {
            try {
                transport.connect(slot, deadline);
            } catch (PeerFailedException ex) {
                throw new PeerFailedException(what("connect") + "engine '" + e.name() + "' (id " + slot + ") cannot be reached: "
                        + ex.getMessage(), List.of(slot), ex);
            }
        }
        boolean sameHost = shm && slot != me.slot() && e.hostId().equals(me.hostId());
        return peers.computeIfAbsent(slot, s -> new EnginePeer(new RemoteEngine(e.name(), s), sameHost)).handle;
    }

    @Override
    public TransferBatch transfer(RemoteEngine remote, List<TransferOp> ops) {
        return transfer(remote, ops, Duration.ofNanos(timeoutNanos));
    }

    @Override
    public TransferBatch transfer(RemoteEngine remote, List<TransferOp> ops, Duration timeout) {
        EngineBatch b = submit(remote, ops, timeout, false);
        b.await();
        return b;
    }

    @Override
    public TransferBatch transferAsync(RemoteEngine remote, List<TransferOp> ops) {
        return transferAsync(remote, ops, Duration.ofNanos(timeoutNanos));
    }

    @Override
    public TransferBatch transferAsync(RemoteEngine remote, List<TransferOp> ops, Duration timeout) {
        return submit(remote, ops, timeout, true);
    }

    private EngineBatch submit(RemoteEngine remote, List<TransferOp> ops, Duration timeout, boolean async) {
        checkOpen("transfer");
        EnginePeer p = peer(remote, "transfer");
        Objects.requireNonNull(ops, "ops");
        deadline(timeout);
        return transfers.submit(p, ops, timeout.toNanos(), async);
    }

    @Override
    public void notify(RemoteEngine remote, String name, byte[] bytes) {
        checkOpen("notify");
        EnginePeer p = peer(remote, "notify");
        TransferConfig.checkName(name, "name");
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length > MAX_NOTIFY_BYTES) {
            throw new IllegalArgumentException(what("notify") + "bytes has " + bytes.length + " bytes, at most " + MAX_NOTIFY_BYTES);
        }
        if (p.slot() == me.slot()) {
            target.deliver(new Notification(me.name(), me.slot(), name, bytes.clone()));
            return;
        }
        SendRequest s = transport.sendRma(p.slot(), RmaFrames.NOTIFY, 0, 0, 0, EngineTarget.notification(me.name(), name, bytes));
        try {
            s.await();
        } catch (PeerFailedException e) {
            throw new PeerFailedException(what("notify '" + name + "'") + "engine '" + remote.name() + "' (id " + remote.id()
                    + "): " + e.getMessage(), List.of(remote.id()), e);
        }
    }

    @Override
    public List<Notification> drainNotifies() {
        return target.drain();
    }

    @Override
    public String transportTo(RemoteEngine remote) {
        Objects.requireNonNull(remote, "remote");
        if (remote.id() == me.slot()) return "self";
        if (remote.id() >= transport.worldSize()) return "none";
        return transport.transportTo(remote.id());
    }

    @Override
    public boolean isClosed() {
        return closed.get();
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) return;
        for (EngineBatch b : active) b.fail(closedError("transfer"));
        // first the BYE: an engine that then misses one of our segments in the store knows we left (EngineTransfers)
        transport.close();
        try {
            directory.withdraw(me);
            for (EngineTarget.Local l : target.byName.values()) directory.withdrawSegment(l.descriptor());
        } catch (RuntimeException e) {
            LOG.warn("engine '{}': cannot take its entries out of the store: {}", me.name(), e.toString());
        }
        copier.shutdown();
        try {
            if (!copier.awaitTermination(10, TimeUnit.SECONDS)) LOG.warn("engine '{}': copies still running at close", me.name());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (EnginePeer p : peers.values()) p.close();
        pool.close();
        store.close();
        LOG.debug("engine '{}' (slot {}) closed", me.name(), me.slot());
    }

    @Override
    public String toString() {
        return "TransferEngine[" + me.name() + ", id " + me.slot() + ", " + me.address() + (closed.get() ? ", closed" : "") + "]";
    }

    // ------------------------------------------------------------------------------------ checks

    private EnginePeer peer(RemoteEngine remote, String op) {
        Objects.requireNonNull(remote, "remote");
        EnginePeer p = peers.get(remote.id());
        if (p == null || !p.handle.equals(remote)) {
            throw new IllegalArgumentException(what(op) + "remote engine '" + remote.name() + "' (id " + remote.id()
                    + ") is not connected here: call connect first");
        }
        return p;
    }

    private void checkOpen(String op) {
        if (closed.get()) throw closedState(op);
    }

    private IllegalStateException closedState(String op) {
        return new IllegalStateException(what(op) + "the engine is closed");
    }

    private CommAbortedException closedError(String op) {
        return new CommAbortedException(what(op) + "the engine is closed");
    }

    private String what(String op) {
        return "engine '" + me.name() + "': " + op + ": ";
    }

    private static long deadline(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) throw new IllegalArgumentException("timeout must be > 0, was " + timeout);
        return System.nanoTime() + timeout.toNanos();
    }
}
