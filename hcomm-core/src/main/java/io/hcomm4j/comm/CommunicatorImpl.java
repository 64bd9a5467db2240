package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Health;
import io.hcomm4j.ReduceFunction;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Status;
import io.hcomm4j.Stream;
import io.hcomm4j.Topology;
import io.hcomm4j.comm.CollectiveFrame.Mode;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * A communicator: the public calls, each checked ({@link ArgumentChecks}) and then handed to the transport (point to
 * point, {@link PointToPoint}) or, as a {@link CollectiveCall}, to the {@link CollectiveFrame} (reductions:
 * {@link ReductionCollectives}; gather, scatter and all-to-all: {@link BlockCollectives}). Membership changes live in
 * {@link Membership}, failure state in {@link CommunicatorHealth}.
 */
final class CommunicatorImpl implements Communicator {
    private final Session session;
    private final PeerTransport transport;
    private final long commId;
    private final int rank;
    private final int size;
    private volatile boolean closed;
    /** Communicator rank → world rank, or null for the world communicator (identity). */
    private final int[] group;
    /** World rank → communicator rank (-1: not a member), or null for the world communicator. */
    private final int[] worldToComm;
    /** Which ranks share a host. */
    private final Topology topology;
    /** Zero-copy collectives among this communicator's ranks, or null (not all on this host, shared memory off, one rank). */
    private final ZeroCopyEngine zc;
    private final ArgumentChecks check;
    private final CommunicatorHealth health;
    private final CollectiveFrame frame;
    private final Membership membership;
    private final PointToPoint p2p;
    private final BlockCollectives blocks;
    private final ScanCollectives scans;
    private final MonitoredBarrier monitoredBarrier;
    private final ReductionCollectives reductions;
    /** Windows made on this communicator so far (each member counts the same: window creation is collective). */
    private final java.util.concurrent.atomic.AtomicInteger windows = new java.util.concurrent.atomic.AtomicInteger();

    /** The world communicator; {@code hostIds[r]} is world rank r's host identity. */
    CommunicatorImpl(Session session, PeerTransport transport, long commId, int rank, int size, String[] hostIds) {
        this(session, transport, commId, rank, null, size, Topology.of(rank, hostIds));
    }

    CommunicatorImpl(Session session, PeerTransport transport, long commId, int rank, int[] group, int size, Topology topology) {
        this.session = session;
        this.topology = topology;
        this.transport = transport;
        this.commId = commId;
        this.rank = rank;
        this.size = size;
        this.group = group;
        if (group == null) {
            this.worldToComm = null;
        } else {
            this.worldToComm = new int[transport.worldSize()];
            java.util.Arrays.fill(worldToComm, -1);
            for (int r = 0; r < group.length; r++) worldToComm[group[r]] = r;
        }
        this.zc = session.zeroCopy(commId, rank, size, group);
        this.check = new ArgumentChecks(transport, rank, size);
        this.health = new CommunicatorHealth(this, session, transport, rank, size);
        this.frame = new CollectiveFrame(this, session, transport, commId, rank, size, group, zc, health,
                new TransportCollectives(session.tuner(), topology, rank, size, session.config().feedback()));
        this.membership = new Membership(this, health, session, transport, topology);
        this.p2p = new PointToPoint(this, transport, commId, rank, size, worldToComm, check, health, frame.metrics, frame.trace);
        this.blocks = new BlockCollectives(frame, check, rank, size);
        this.scans = new ScanCollectives(frame, check);
        this.monitoredBarrier = new MonitoredBarrier(transport, commId, rank, size, group);
        this.reductions = new ReductionCollectives(frame, check, rank, size);
        check.refuseThrough(frame);
        this.bean = CommunicatorBean.register(this, world(rank));
    }

    /** Its JMX bean, or null (JMX refused it). */
    private final CommunicatorBean bean;

    /** Its JMX bean's name, or null. */
    javax.management.ObjectName beanName() {
        return bean == null ? null : bean.name();
    }

    /** The transport algorithms (and their feedback) of this communicator. */
    TransportCollectives transportCollectives() {
        return frame.algorithms();
    }

    /** A communicator of world ranks {@code group} (in rank order), seen from world rank {@code me}. */
    static CommunicatorImpl ofGroup(Session session, PeerTransport transport, long id, int me, int[] group, String[] hostIds) {
        int myRank = -1;
        String[] labels = new String[group.length];
        for (int i = 0; i < group.length; i++) {
            if (group[i] == me) myRank = i;
            labels[i] = hostIds[group[i]];
        }
        return new CommunicatorImpl(session, transport, id, myRank, group.clone(), group.length, Topology.of(myRank, labels));
    }

    /** The collectives of per-rank blocks (a stream queues them too). */
    BlockCollectives blocks() {
        return blocks;
    }

    /** The reducing collectives (a stream queues them too). */
    ReductionCollectives reductions() {
        return reductions;
    }

    /** scan and exscan (a stream queues them too). */
    ScanCollectives scans() {
        return scans;
    }

    /** The zero-copy engine, or null (tests and diagnostics). */
    ZeroCopyEngine zeroCopy() {
        return zc;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public Topology topology() {
        return topology;
    }

    // ------------------------------------------------------------------------------------ point to point

    @Override
    public CommFuture<Void> sendAsync(MemorySegment buf, int peer, int tag) {
        return p2p.send(buf, peer, tag);
    }

    /** A send of a stream of {@code priority}. */
    CommFuture<Void> sendAsync(MemorySegment buf, int peer, int tag, Stream.Priority priority) {
        return p2p.send(buf, peer, tag, priority == Stream.Priority.HIGH);
    }

    @Override
    public CommFuture<Status> recvAsync(MemorySegment buf, int peer, int tag) {
        return p2p.recv(buf, peer, tag);
    }

    @Override
    public CommFuture<Status> probeAsync(int peer, int tag) {
        return p2p.probe(peer, tag);
    }

    @Override
    public java.util.Optional<Status> iprobe(int peer, int tag) {
        return p2p.iprobe(peer, tag);
    }

    /** The world rank of communicator rank {@code r}. */
    int world(int r) {
        return group == null ? r : group[r];
    }

    // ------------------------------------------------------------------------------------ collectives
    // (same-shaped on purpose: each collective's blocking and async entry points mirror the public API, one pair each)

    @Override
    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        reductions.allReduce(send, recv, count, type, op, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return reductions.allReduce(send, recv, count, type, op, Mode.ASYNC);
    }

    CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, Mode mode) {
        return reductions.allReduce(send, recv, count, type, op, mode);
    }

    @Override
    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function) {
        reductions.allReduce(send, recv, count, type, function, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function) {
        return reductions.allReduce(send, recv, count, type, function, Mode.ASYNC);
    }

    @Override
    public void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        reductions.reduce(send, recv, count, type, op, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        return reductions.reduce(send, recv, count, type, op, root, Mode.ASYNC);
    }

    CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root, Mode mode) {
        return reductions.reduce(send, recv, count, type, op, root, mode);
    }

    @Override
    public void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function, int root) {
        reductions.reduce(send, recv, count, type, function, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function,
                                        int root) {
        return reductions.reduce(send, recv, count, type, function, root, Mode.ASYNC);
    }

    @Override
    public void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        reductions.reduceScatter(send, recv, recvCount, type, op, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        return reductions.reduceScatter(send, recv, recvCount, type, op, Mode.ASYNC);
    }

    CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op, Mode mode) {
        return reductions.reduceScatter(send, recv, recvCount, type, op, mode);
    }

    @Override
    public void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceFunction function) {
        reductions.reduceScatter(send, recv, recvCount, type, function, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type,
                                               ReduceFunction function) {
        return reductions.reduceScatter(send, recv, recvCount, type, function, Mode.ASYNC);
    }

    @Override
    public void reduceScatterV(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op) {
        reductions.reduceScatterV(send, recv, recvCounts, type, op, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceScatterVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op) {
        return reductions.reduceScatterV(send, recv, recvCounts, type, op, Mode.ASYNC);
    }

    @Override
    public void broadcast(MemorySegment buf, long count, DataType type, int root) {
        broadcast(buf, count, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> broadcastAsync(MemorySegment buf, long count, DataType type, int root) {
        return broadcast(buf, count, type, root, Mode.ASYNC);
    }

    CommFuture<Void> broadcast(MemorySegment buf, long count, DataType type, int root, Mode mode) {
        CollectiveOp o = CollectiveOp.BROADCAST;
        long n = check.bytes(o, "buf", buf, count, type);
        check.root(o, root);
        if (rank != root) check.writable(o, "buf", buf);
        CollectiveCall c = frame.call(mode).of(o, count, type, (ReduceOp) null, root, n, buf, null);
        c.root = root;
        return frame.start(c, mode);
    }

    @Override
    public void allGather(MemorySegment send, MemorySegment recv, long count, DataType type) {
        allGather(send, recv, count, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allGatherAsync(MemorySegment send, MemorySegment recv, long count, DataType type) {
        return allGather(send, recv, count, type, Mode.ASYNC);
    }

    CommFuture<Void> allGather(MemorySegment send, MemorySegment recv, long count, DataType type, Mode mode) {
        return blocks.allGather(send, recv, count, type, mode);
    }

    @Override
    public void allGatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type) {
        blocks.allGatherV(send, recv, recvCounts, displs, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allGatherVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type) {
        return blocks.allGatherV(send, recv, recvCounts, displs, type, Mode.ASYNC);
    }

    @Override
    public void gather(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        blocks.gather(send, recv, count, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> gatherAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        return blocks.gather(send, recv, count, type, root, Mode.ASYNC);
    }

    @Override
    public void gatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type, int root) {
        blocks.gatherV(send, recv, recvCounts, displs, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> gatherVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs,
                                         DataType type, int root) {
        return blocks.gatherV(send, recv, recvCounts, displs, type, root, Mode.ASYNC);
    }

    @Override
    public void scatter(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        blocks.scatter(send, recv, count, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> scatterAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        return blocks.scatter(send, recv, count, type, root, Mode.ASYNC);
    }

    @Override
    public void scatterV(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv, DataType type, int root) {
        blocks.scatterV(send, sendCounts, displs, recv, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> scatterVAsync(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv,
                                          DataType type, int root) {
        return blocks.scatterV(send, sendCounts, displs, recv, type, root, Mode.ASYNC);
    }

    @Override
    public void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        allToAll(send, recv, count, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allToAllAsync(MemorySegment send, MemorySegment recv, long count, DataType type) {
        return allToAll(send, recv, count, type, Mode.ASYNC);
    }

    CommFuture<Void> allToAll(MemorySegment send, MemorySegment recv, long count, DataType type, Mode mode) {
        return blocks.allToAll(send, recv, count, type, mode);
    }

    @Override
    public void allToAllV(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv, long[] recvCounts,
                          long[] recvDispls, DataType type) {
        blocks.allToAllV(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allToAllVAsync(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv,
                                           long[] recvCounts, long[] recvDispls, DataType type) {
        return blocks.allToAllV(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, Mode.ASYNC);
    }

    @Override
    public void scan(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        scans.scan(send, recv, count, type, op, false, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> scanAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return scans.scan(send, recv, count, type, op, false, Mode.ASYNC);
    }

    @Override
    public void exscan(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        scans.scan(send, recv, count, type, op, true, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> exscanAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return scans.scan(send, recv, count, type, op, true, Mode.ASYNC);
    }

    @Override
    public void monitoredBarrier(java.time.Duration timeout) {
        checkUsable("monitoredBarrier");
        monitoredBarrier.run(timeout);
    }

    @Override
    public io.hcomm4j.KeyValueStore store() {
        return session.appStore();
    }

    @Override
    public void barrier() {
        barrier(Mode.BLOCKING);
    }

    @Override
    public int warmUp(java.time.Duration budget) {
        return WarmUp.run(this, WarmUp.checkedBudget(rank, budget));
    }

    @Override
    public CommFuture<Void> barrierAsync() {
        return barrier(Mode.ASYNC);
    }

    CommFuture<Void> barrier(Mode mode) {
        CollectiveCall c = frame.call(mode).of(CollectiveOp.BARRIER, 0, null, (ReduceOp) null, -1, 0, null, null);
        return frame.start(c, mode);
    }

    // ------------------------------------------------------------------------------- sub-communicators

    @Override
    public Communicator split(int color, int key) {
        return membership.split(color, key);
    }

    @Override
    public Communicator dup() {
        return membership.dup();
    }

    @Override
    public Communicator shrink() {
        return membershipChange("shrink", () -> membership.shrink());
    }

    @Override
    public Communicator grow(int joiners) {
        return membershipChange("grow", () -> membership.grow(joiners));
    }

    /** Runs shrink or grow as a JFR event when a recording wants one. */
    private Communicator membershipChange(String op, java.util.function.Supplier<Communicator> change) {
        MembershipEvent e = new MembershipEvent();
        if (!e.isEnabled()) return change.get();
        e.begin();
        e.op = op;
        e.communicator = commId;
        e.sizeBefore = size;
        try {
            Communicator made = change.get();
            e.outcome = "ok";
            if (made instanceof CommunicatorImpl m) {
                e.newCommunicator = m.id();
                e.sizeAfter = m.size();
                e.rank = m.rank();
            }
            return made;
        } catch (RuntimeException | Error x) {
            e.outcome = x.getClass().getSimpleName();
            throw x;
        } finally {
            e.commit();
        }
    }

    @Override
    public io.hcomm4j.Batch batch() {
        checkOpen();
        return new BatchImpl(this, session::explainWait);
    }

    @Override
    public io.hcomm4j.memory.MemoryPool memory() {
        return session.memory();
    }

    @Override
    public io.hcomm4j.Window allocateWindow(long bytes) {
        checkUsable("allocateWindow");
        return session.rma().allocate(new WindowMembers(this, session, transport, windows.getAndIncrement()), bytes);
    }

    @Override
    public io.hcomm4j.Window createWindow(MemorySegment segment) {
        Objects.requireNonNull(segment, "segment");
        checkUsable("createWindow");
        return session.rma().create(new WindowMembers(this, session, transport, windows.getAndIncrement()), segment);
    }

    /** Throws if this communicator is closed or aborted. */
    void checkUsable(String op) {
        checkOpen();
        health.checkNotAborted(op);
    }

    @Override
    public Stream newStream() {
        return newStream(Stream.Priority.NORMAL);
    }

    @Override
    public Stream newStream(Stream.Priority priority) {
        java.util.Objects.requireNonNull(priority, "priority");
        checkOpen();
        StreamImpl s = new StreamImpl(this, session, priority);
        session.register(s);
        return s;
    }

    long timeoutNanos() {
        return session.config().timeout().toNanos();
    }

    void checkOpen() {
        if (closed || session.isClosed()) {
            throw new IllegalStateException("rank " + rank + ": the communicator is closed");
        }
    }

    @Override
    public boolean isClosed() {
        return closed || session.isClosed();
    }

    void markClosed() {
        closed = true;
        frame.shutdown();
        if (zc != null) zc.close();
        if (bean != null) bean.unregister();
    }

    @Override
    public void close() {
        markClosed();
        if (group != null) {
            session.unregister(this);
            session.unregisterCommunicator(this);
            // its match tables go (issue 18): a job that makes and closes communicators keeps those it has open
            transport.closeCommunicator(commId, () -> new io.hcomm4j.CommAbortedException("rank " + rank + ": " + this + " was closed"));
        }
    }

    @Override
    public String toString() {
        return "Communicator{rank=" + rank + ", size=" + size + ", id=" + commId + "}";
    }

    // ------------------------------------------------------------------------------------ fault tolerance

    long id() {
        return commId;
    }

    /** The transport (tests look at its match tables). */
    PeerTransport transport() {
        return transport;
    }

    /** The flight record of this communicator's ops. */
    io.hcomm4j.monitor.OpTrace trace() {
        return frame.trace;
    }

    @Override
    public void dumpTrace(java.nio.file.Path file) {
        java.util.Objects.requireNonNull(file, "file");
        try {
            session.traces().write(file, "dumpTrace");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("rank " + rank + ": dumpTrace: cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    /** Collectives called on this communicator so far (the sequence number of the last one). */
    long collectivesCalled() {
        return frame.called();
    }

    /** What this rank waits for in a zero-copy op of this communicator now, or null. */
    ZeroCopyEngine.Wait zeroCopyWait() {
        ZeroCopyEngine z = zc;
        return z == null ? null : z.currentWait();
    }

    /** The zero-copy engine, or null. */
    ZeroCopyEngine zeroCopyEngine() {
        return zc;
    }

    /** The transport collectives running now. */
    java.util.Collection<TransportLinks> running() {
        return health.running();
    }

    /** World ranks of the members, in communicator rank order. */
    int[] worldRanks() {
        int[] w = new int[size];
        for (int r = 0; r < size; r++) w[r] = world(r);
        return w;
    }

    /** This communicator's rank of world rank {@code w}, or -1 if it is not a member. */
    int commRank(int w) {
        if (worldToComm == null) return w >= 0 && w < size ? w : -1;
        return w >= 0 && w < worldToComm.length ? worldToComm[w] : -1;
    }

    @Override
    public java.util.List<io.hcomm4j.OpStats> metrics() {
        return frame.metrics.snapshot(java.util.Set.of("send", "recv"));
    }

    @Override
    public Health health() {
        return health.health();
    }

    @Override
    public void addHealthListener(Consumer<Health> listener) {
        health.addListener(listener);
    }

    @Override
    public void removeHealthListener(Consumer<Health> listener) {
        health.removeListener(listener);
    }

    @Override
    public void abort() {
        if (session.isClosed()) return;
        if (!health.markAborted("rank " + rank + " aborted the communicator (comm.abort())", zc)) return;
        transport.sendAbort(commId, worldRanks());
        session.traces().aborted("rank " + rank + " aborted " + this);
    }

    /** World rank {@code from} aborted this communicator. */
    void onAbortNotice(int from) {
        if (health.markAborted("rank " + commRank(from) + " aborted the communicator (comm.abort())", zc)) {
            session.traces().aborted("rank " + commRank(from) + " aborted " + this);
        }
    }

    /** Another rank declared this one failed: nothing on this communicator can work any more. */
    void onDeclaredFailed(String why) {
        health.markAborted(why, zc);
    }

    /** World rank {@code w} closed its session: see {@link CommunicatorHealth#onMemberLeft}. */
    void onMemberLeft(int w) {
        health.onMemberLeft(w);
    }

    /** World rank {@code w} failed: see {@link CommunicatorHealth#onMemberFailed}. */
    void onMemberFailed(int w, String why) {
        health.onMemberFailed(w, why);
    }
}
