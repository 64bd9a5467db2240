package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.algo.AllGather;
import io.hcomm4j.algo.AllToAll;
import io.hcomm4j.algo.Broadcast;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.algo.CollectiveLinks;
import io.hcomm4j.algo.HalvingDoubling;
import io.hcomm4j.algo.Hierarchical;
import io.hcomm4j.Topology;
import io.hcomm4j.algo.Reductions;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.kernel.ReduceKernel;
import io.hcomm4j.algo.Rooted;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import io.hcomm4j.Status;
import io.hcomm4j.Stream;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** A communicator: argument checks, then the transport. Ranks equal world ranks (sub-communicators come later). */
final class CommunicatorImpl implements Communicator {
    private final Session session;
    private final PeerTransport transport;
    private final long commId;
    private final int rank;
    private final int size;
    private volatile boolean closed;
    /** Collective traffic of this communicator: its id with the top bit set, apart from user point-to-point. */
    private final long collectiveChannel;
    /** Where a rank that detects a collective mismatch tells the others (tag = the op's sequence number). */
    private final long noticeChannel;
    private final AtomicLong collectiveSeq = new AtomicLong();
    private ExecutorService collectiveThread;

    static final long BCAST_CHUNK = Broadcast.CHAIN_CHUNK;

    /** Ring chunk, in elements, for blocks of {@code blockBytes} ({@link Reductions#ringChunkElems}). */
    static long ringChunkElems(long blockBytes, int elemBytes) {
        return Reductions.ringChunkElems(blockBytes, elemBytes);
    }

    /** Communicator rank → world rank, or null for the world communicator (identity). */
    private final int[] group;
    /** World rank → communicator rank (-1: not a member), or null for the world communicator. */
    private final int[] worldToComm;
    /** Splits and dups made so far: part of a child's id, so siblings never share one. */
    private final AtomicLong children = new AtomicLong();

    // fault tolerance: health, and the collectives running now (the stuck-op registry)
    private final Object healthLock = new Object();
    private volatile io.hcomm4j.Health health = io.hcomm4j.Health.READY;
    /** Members (communicator ranks) known to have failed; guarded by {@link #healthLock}. */
    private final java.util.TreeSet<Integer> failedMembers = new java.util.TreeSet<>();
    /** Why the communicator cannot be used at all (aborted, or this rank declared failed), or null. */
    private volatile String abortedWhy;
    private final java.util.Set<TransportLinks> running = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Counters per op: the collectives (OPS, from index 1) and then send and recv. */
    private final OpMetrics metrics = new OpMetrics(METRIC_NAMES);
    private final java.util.concurrent.CopyOnWriteArrayList<java.util.function.Consumer<io.hcomm4j.Health>> listeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Which ranks share a host. */
    private final Topology topology;
    /** The topology as the tuner sees it. */
    private final Tuner.Shape shape;

    /** The world communicator; {@code hostIds[r]} is world rank r's host identity. */
    CommunicatorImpl(Session session, PeerTransport transport, long commId, int rank, int size, String[] hostIds) {
        this(session, transport, commId, rank, null, size, Topology.of(rank, hostIds));
    }

    /** Zero-copy collectives among this communicator's ranks, or null (not all on this host, shared memory off, one rank). */
    private final ZeroCopyEngine zc;

    private CommunicatorImpl(Session session, PeerTransport transport, long commId, int rank, int[] group, int size,
                             Topology topology) {
        this.session = session;
        this.topology = topology;
        this.shape = Tuner.Shape.of(topology);
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
        this.collectiveChannel = commId | (1L << 62);
        this.noticeChannel = commId | (2L << 62);
        this.zc = session.zeroCopy(commId, rank, size, group);
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

    @Override
    public CommFuture<Void> sendAsync(MemorySegment buf, int peer, int tag) {
        checkOpen();
        checkNotAborted("send");
        Objects.requireNonNull(buf, "buf");
        if (peer < 0 || peer >= size) {
            throw new IllegalArgumentException("rank " + rank + ": send: peer " + peer + " is out of range [0, " + size + ")");
        }
        if (tag < 0) throw new IllegalArgumentException("rank " + rank + ": send: tag " + tag + " must be >= 0");
        checkShared(buf, "send");
        CommFuture<Void> f = transport.send(commId, world(peer), tag, buf, 0, worldToComm);
        metrics.count(SEND_METRIC, buf.byteSize()); // after: an eager message is on its way before the counting
        return f;
    }

    @Override
    public CommFuture<Status> recvAsync(MemorySegment buf, int peer, int tag) {
        checkOpen();
        checkNotAborted("recv");
        Objects.requireNonNull(buf, "buf");
        checkSource(peer, tag, "recv");
        if (buf.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": recv: buf is read-only");
        checkShared(buf, "recv");
        metrics.count(RECV_METRIC, buf.byteSize());
        return transport.recv(commId, peer == ANY_SOURCE ? PeerTransport.ANY : world(peer), tag == ANY_TAG ? PeerTransport.ANY : tag,
                buf, worldToComm);
    }

    @Override
    public CommFuture<Status> probeAsync(int peer, int tag) {
        checkOpen();
        checkNotAborted("probe");
        checkSource(peer, tag, "probe");
        return transport.probe(commId, peer == ANY_SOURCE ? PeerTransport.ANY : world(peer), tag == ANY_TAG ? PeerTransport.ANY : tag,
                worldToComm);
    }

    @Override
    public java.util.Optional<Status> iprobe(int peer, int tag) {
        checkOpen();
        checkSource(peer, tag, "iprobe");
        return java.util.Optional.ofNullable(
                transport.iprobe(commId, peer == ANY_SOURCE ? PeerTransport.ANY : world(peer), tag == ANY_TAG ? PeerTransport.ANY : tag,
                        worldToComm));
    }

    /** The world rank of communicator rank {@code r}. */
    int world(int r) {
        return group == null ? r : group[r];
    }

    private void checkSource(int peer, int tag, String op) {
        if (peer != ANY_SOURCE && (peer < 0 || peer >= size)) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": peer " + peer + " is out of range [0, " + size
                    + ") and is not ANY_SOURCE");
        }
        if (tag < 0 && tag != ANY_TAG) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": tag " + tag + " must be >= 0 or ANY_TAG");
        }
    }

    // ------------------------------------------------------------------------------------ collectives

    /**
     * Where a collective runs. Its sequence number (the tag of all its messages) is taken when it is called,
     * so every rank numbers its collectives in program order whatever thread or stream runs them.
     */
    static final class Mode {
        /** On the caller's thread. */
        static final Mode BLOCKING = new Mode(null, false);
        /** On the communicator's collective thread. */
        static final Mode ASYNC = new Mode(null, true);
        final StreamImpl stream;
        final boolean async;

        private Mode(StreamImpl stream, boolean async) {
            this.stream = stream;
            this.async = async;
        }

        /** Queued on {@code stream}, after what is already queued there. */
        static Mode on(StreamImpl stream) {
            return new Mode(stream, true);
        }
    }

    /** Runs a collective where {@code mode} says; returns its future (null when it ran on the caller's thread). */
    private CommFuture<Void> collective(String op, int fingerprint, Mode mode, Consumer<CollectiveLinks> body) {
        return collective(op, fingerprint, -1, mode, body);
    }

    /**
     * Runs a collective through the transport where {@code mode} says; returns its future (null when it ran on the
     * caller's thread). For a communicator without a zero-copy engine (with one, every collective takes its shared-memory
     * frame, which falls back to the transport under its ticket). The communicator's health is checked here (an aborted
     * one, or one with failed members, fails at once), and again when it starts running.
     *
     * @param bytes the op's size for reports (its largest buffer), or -1 if not known
     */
    private CommFuture<Void> collective(String op, int fingerprint, long bytes, Mode mode, Consumer<CollectiveLinks> body) {
        checkUsable(op);
        long seq = collectiveSeq.incrementAndGet();
        if (!mode.async) {
            runCollective(seq, op, fingerprint, bytes, body, false);
            return null;
        }
        return dispatch(op, mode, () -> runCollective(seq, op, fingerprint, bytes, body, false));
    }

    /** Fails at once if this communicator is closed, aborted or has failed members ({@code op} names the call). */
    private void checkUsable(String op) {
        checkOpen();
        RuntimeException broken = brokenFor(op, "");
        if (broken != null) throw broken;
    }

    /** Runs {@code task} (an op already numbered) on the stream or the collective thread that {@code mode} names. */
    private CommFuture<Void> dispatch(String op, Mode mode, Runnable task) {
        return dispatch(op, mode, task, null);
    }

    /**
     * Runs {@code task}, an op holding zero-copy ticket {@code ticket} of {@code z} (its sequence number: on a
     * communicator with an engine every collective is numbered in call order, which is its turn), where {@code mode}
     * says; if it will never run (the queue refuses it, or a stream skips it after an earlier failure) its ticket is
     * given up, so the ops after it are not held up.
     */
    private CommFuture<Void> dispatch(ZeroCopyEngine z, long ticket, String op, Mode mode, Runnable task) {
        try {
            return dispatch(op, mode, task, () -> z.skip(ticket));
        } catch (RuntimeException e) {
            z.skip(ticket);
            throw e;
        }
    }

    private CommFuture<Void> dispatch(String op, Mode mode, Runnable task, Runnable skipped) {
        if (mode.stream != null) return mode.stream.enqueueCollective(op, task, skipped);
        WorkerFuture<Void> f = new WorkerFuture<>(timeoutNanos(), rank, op);
        collectiveThread().execute(() -> {
            try {
                task.run();
                f.complete(null);
            } catch (Throwable e) {
                f.completeExceptionally(e);
            }
        });
        return f;
    }

    /** Names of the collectives, in fingerprint order (the fingerprint's top 4 bits). */
    static final java.util.List<String> OPS = java.util.List.of("", "allReduce", "reduce", "reduceScatter", "reduceScatterV",
            "broadcast", "allGather", "allGatherV", "gather", "gatherV", "scatter", "scatterV", "allToAll", "allToAllV", "barrier");

    /** The ops {@link #metrics()} counts: the collectives of OPS, then send and recv. */
    private static final java.util.List<String> METRIC_NAMES;
    private static final int SEND_METRIC;
    private static final int RECV_METRIC;

    static {
        java.util.List<String> names = new java.util.ArrayList<>(OPS.subList(1, OPS.size()));
        names.add("send");
        names.add("recv");
        METRIC_NAMES = java.util.List.copyOf(names);
        SEND_METRIC = names.indexOf("send");
        RECV_METRIC = names.indexOf("recv");
    }

    /**
     * What every message of a collective carries, so that a receiver notices a peer in another collective or the
     * same one with other arguments: the op in the top 4 bits, a hash of count, type, reduce op and root below.
     */
    static int fingerprint(String op, long count, DataType type, ReduceOp redop, int root) {
        long h = count * 0x9E3779B97F4A7C15L;
        h += (type == null ? 0 : type.ordinal() + 1) * 0xC2B2AE3D27D4EB4FL;
        h += (redop == null ? 0 : redop.ordinal() + 1) * 0x165667B19E3779F9L;
        h += (root + 2L) * 0xD6E8FEB86659FD93L;
        h ^= h >>> 32;
        return (OPS.indexOf(op) << 28) | (int) (h & 0x0FFFFFFF);
    }

    /**
     * HCOMM_CHECK=full: every rank's fingerprint of this op to every rank (Bruck all-gather on the check
     * channel), compared before any data moves, so all ranks reach the same verdict.
     */
    private void fullCheck(long seq, String op, int fingerprint) {
        if (size == 1) return;
        int[] all = new int[size];
        all[rank] = fingerprint;
        try (TransportLinks check = new TransportLinks(transport, commId | (3L << 62), noticeChannel, seq, rank, size, group,
                op + " (check)", 0, session.scratch(), 4L * size)) {
            running.add(check);
            try {
                failIfBroken(check);
                AllGather.bruck(check, MemorySegment.ofArray(all), 4);
            } finally {
                running.remove(check);
            }
        }
        for (int r = 0; r < size; r++) {
            if (all[r] != all[0]) {
                int odd = r;
                // name the rank that differs from the majority, if there is one
                int agree = 0;
                for (int x : all) if (x == all[r]) agree++;
                if (agree * 2 > size) {
                    for (int q = 0; q < size; q++) if (all[q] != all[r]) { odd = q; break; }
                }
                String theirs = OPS.get(Math.min(OPS.size() - 1, all[odd] >>> 28));
                String others = OPS.get(Math.min(OPS.size() - 1, all[odd == 0 ? 1 : 0] >>> 28));
                throw new io.hcomm4j.CollectiveMismatchException("rank " + rank + ": " + op + " (collective #" + seq
                        + ", full check): rank " + odd + " called " + theirs + (theirs.equals(others)
                        ? " with a different count, type, op or root than rank " + (odd == 0 ? 1 : 0) : " where rank " + (odd == 0 ? 1 : 0) + " called " + others));
            }
        }
    }

    /** A peer failed during op {@code seq} under the zero-copy engine (which names this communicator's ranks). */
    private io.hcomm4j.PeerFailedException zeroCopyFailure(long seq, String op, io.hcomm4j.PeerFailedException e) {
        return opFailure(seq, op, e, true);
    }

    /**
     * Op {@code seq} fails as a whole because a peer failed, naming every member known to have failed, in this
     * communicator's ranks; {@code e} names them as communicator ranks ({@code commRanks}: the zero-copy engine) or as
     * world ranks (the transport).
     */
    private io.hcomm4j.PeerFailedException opFailure(long seq, String op, io.hcomm4j.PeerFailedException e, boolean commRanks) {
        String which = " (collective #" + seq + ")";
        if (e.getMessage() != null && e.getMessage().contains(which + " on a communicator")) return e;
        java.util.TreeSet<Integer> failed = new java.util.TreeSet<>(health.failedRanks());
        String why = null;
        for (int named : e.failedRanks()) {
            int r = commRanks ? (named >= 0 && named < size ? named : -1) : commRank(named);
            if (r < 0) continue;
            failed.add(r);
            String known = transport.failureReason(commRanks ? world(r) : named);
            if (why == null && known != null) why = "rank " + r + " failed: " + known;
        }
        return peersFailed(op, which, java.util.List.copyOf(failed), why != null ? why : e.getMessage(), e);
    }

    /** An op the zero-copy engine ran: counted in the metrics and, while a recording wants it, a JFR event. */
    private void zeroCopyDone(CollectiveEvent event, long seq, String op, long bytes, long t0) {
        metrics.record(metrics.index(op), bytes, System.nanoTime() - t0, false);
        commitEvent(event, seq, op, bytes, null);
    }

    /** Ends {@code event} (null: no recording wants it) and commits it with the op's fields; {@code failure} null: ok. */
    private void commitEvent(CollectiveEvent event, long seq, String op, long bytes, Throwable failure) {
        if (event == null) return;
        event.end();
        if (event.shouldCommit()) {
            event.op = op;
            event.communicator = commId;
            event.rank = rank;
            event.ranks = size;
            event.sequence = seq;
            event.bytes = Math.max(0, bytes);
            event.outcome = failure == null ? "ok" : failure.getClass().getSimpleName();
            event.commit();
        }
    }

    /** {@link #runCollective(long, String, int, long, Consumer, boolean)} of an op whose size is not passed on. */
    private void runCollective(long seq, String op, int fingerprint, Consumer<CollectiveLinks> body, boolean checked) {
        runCollective(seq, op, fingerprint, -1, body, checked);
    }

    /**
     * Runs the transport algorithm {@code body} of op {@code seq} ({@code bytes}: its size for metrics, or -1), counted in
     * the metrics and as a JFR event; {@code checked}: the zero-copy frame ran HCOMM_CHECK=full's check already.
     */
    private void runCollective(long seq, String op, int fingerprint, long bytes, Consumer<CollectiveLinks> body, boolean checked) {
        CollectiveEvent event = CollectiveEvent.wanted() ? new CollectiveEvent() : null;
        if (event != null) event.begin();
        long t0 = System.nanoTime();
        Throwable failure = null;
        try {
            runCollectiveBody(seq, op, fingerprint, bytes, body, checked);
        } catch (RuntimeException | Error e) {
            failure = e;
            throw e;
        } finally {
            metrics.record(metrics.index(op), bytes, System.nanoTime() - t0, failure != null);
            commitEvent(event, seq, op, bytes, failure);
        }
    }

    private void runCollectiveBody(long seq, String op, int fingerprint, long bytes, Consumer<CollectiveLinks> body,
                                   boolean checked) {
        try (TransportLinks links = new TransportLinks(transport, collectiveChannel, noticeChannel, seq, rank, size, group, op,
                fingerprint, session.scratch(), bytes)) {
            running.add(links);
            try {
                failIfBroken(links);
                if (session.config().fullCheck() && !checked) fullCheck(seq, op, fingerprint);
                body.accept(links);
            } catch (io.hcomm4j.CollectiveMismatchException e) {
                links.tellOthers(e);
                throw e;
            } catch (io.hcomm4j.PeerFailedException e) {
                throw collectiveFailure(links, e);
            } finally {
                running.remove(links);
            }
        }
    }

    /**
     * A send or receive of a collective failed because a peer failed (the transport saw it first): the collective fails
     * as a whole, naming every member known to have failed, in this communicator's ranks.
     */
    private io.hcomm4j.PeerFailedException collectiveFailure(TransportLinks links, io.hcomm4j.PeerFailedException e) {
        return opFailure(links.seq(), links.op(), e, false);
    }

    /**
     * If this communicator is aborted or has failed members, fails {@code links} (registered in {@link #running} first,
     * so a failure that becomes known meanwhile fails it either here or through {@link #onMemberFailed}) and throws.
     */
    private void failIfBroken(TransportLinks links) {
        RuntimeException broken = brokenFor(links.op(), " (collective #" + links.seq() + ")");
        if (broken == null) return;
        links.abort(broken);
        throw TransportLinks.fresh(broken);
    }

    private Tuner tuner() {
        return session.tuner();
    }

    private synchronized ExecutorService collectiveThread() {
        if (collectiveThread == null) {
            collectiveThread = Executors.newSingleThreadExecutor(r -> Thread.ofPlatform().daemon()
                    .name("hcomm-coll-" + rank + "-" + commId).unstarted(r));
        }
        return collectiveThread;
    }

    private long bytes(String op, String arg, MemorySegment buf, long count, DataType type) {
        java.util.Objects.requireNonNull(type, "type");
        if (count < 0) throw new IllegalArgumentException("rank " + rank + ": " + op + ": count " + count + " must be >= 0");
        long need = Math.multiplyExact(count, type.byteSize());
        checkBuffer(op, arg, buf, need);
        return need;
    }

    private void checkBuffer(String op, String arg, MemorySegment buf, long need) {
        java.util.Objects.requireNonNull(buf, arg);
        if (buf.byteSize() < need) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": " + arg + " holds " + buf.byteSize()
                    + " bytes, the call needs " + need);
        }
        checkShared(buf, op);
    }

    private void checkRoot(String op, int root) {
        if (root < 0 || root >= size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": root " + root + " is out of range [0, " + size + ")");
        }
    }

    /** Byte offsets and sizes of variable blocks, checked against the buffer. */
    private long[][] blocks(String op, String arg, MemorySegment buf, long[] counts, long[] displs, DataType type) {
        java.util.Objects.requireNonNull(counts, arg + "Counts");
        java.util.Objects.requireNonNull(displs, arg + " displs");
        if (counts.length != size || displs.length != size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": counts and displs need " + size
                    + " entries (one per rank), have " + counts.length + " and " + displs.length);
        }
        long[] off = new long[size];
        long[] len = new long[size];
        long need = 0;
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0 || displs[r] < 0) {
                throw new IllegalArgumentException("rank " + rank + ": " + op + ": counts[" + r + "] = " + counts[r]
                        + " and displs[" + r + "] = " + displs[r] + " must be >= 0");
            }
            off[r] = Math.multiplyExact(displs[r], type.byteSize());
            len[r] = Math.multiplyExact(counts[r], type.byteSize());
            need = Math.max(need, off[r] + len[r]);
        }
        checkBuffer(op, arg, buf, need);
        return new long[][] {off, len};
    }

    private ReduceKernel kernel(DataType type, ReduceOp op) {
        java.util.Objects.requireNonNull(type, "type");
        java.util.Objects.requireNonNull(op, "op");
        return ReduceKernel.of(type, op);
    }

    private void checkWritable(String op, String arg, MemorySegment buf) {
        if (buf.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": " + op + ": " + arg + " is read-only");
    }

    @Override
    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        allReduce(send, recv, count, type, op, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return allReduce(send, recv, count, type, op, Mode.ASYNC);
    }

    CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
                                       Mode mode) {
        ReduceKernel k = kernel(type, op);
        long n = bytes("allReduce", "send", send, count, type);
        checkBuffer("allReduce", "recv", recv, n);
        checkWritable("allReduce", "recv", recv);
        int avg = op == ReduceOp.AVG ? size : 1;
        int fp = fingerprint("allReduce", count, type, op, -1);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("allReduce", fp, mode, allReduceBody(send, recv, count, type, k, avg));
        checkUsable("allReduce");
        long seq = collectiveSeq.incrementAndGet(); // also the op's zero-copy ticket
        if (!mode.async) {
            allReduceHere(z, seq, fp, send, recv, count, type, k, avg);
            return null;
        }
        return dispatch(z, seq, "allReduce", mode, () -> allReduceHere(z, seq, fp, send, recv, count, type, k, avg));
    }

    /** An all-reduce under the zero-copy engine: in shared memory if every rank can, else through the transport. */
    private void allReduceHere(ZeroCopyEngine z, long seq, int fp, MemorySegment send, MemorySegment recv, long count,
                               DataType type, ReduceKernel k, int avg) {
        z.enter(seq, "allReduce");
        try {
            if (session.config().fullCheck()) fullCheck(seq, "allReduce", fp);
            long t0 = System.nanoTime();
            CollectiveEvent ev = CollectiveEvent.wanted() ? new CollectiveEvent() : null;
            if (ev != null) ev.begin();
            long bytes = count * type.byteSize();
            z.opBytes(bytes);
            if (z.allReduce(seq, fp, "allReduce", send, recv, count, k, avg, tuner().forced(Tuner.Op.ALLREDUCE) == null)) {
                zeroCopyDone(ev, seq, "allReduce", bytes, t0);
            } else {
                runCollective(seq, "allReduce", fp, bytes, allReduceBody(send, recv, count, type, k, avg), true);
            }
        } catch (io.hcomm4j.PeerFailedException e) {
            throw zeroCopyFailure(seq, "allReduce", e);
        } finally {
            z.leave(seq);
        }
    }

    /** The transport algorithm of an all-reduce (the tuner's choice). */
    private Consumer<CollectiveLinks> allReduceBody(MemorySegment send, MemorySegment recv, long count, DataType type,
                                                    ReduceKernel k, int avg) {
        long n = count * type.byteSize();
        long chunk = ringChunkElems(n / size, type.byteSize());
        Tuner.Algo algo = tuner().choose(Tuner.Op.ALLREDUCE, n, shape);
        Tuner.Levels levels = algo == Tuner.Algo.HIERARCHICAL ? tuner().levels(Tuner.Op.ALLREDUCE, n, shape, topology.localSize()) : null;
        return l -> {
            if (algo == Tuner.Algo.HIERARCHICAL) {
                Hierarchical.allReduce(l, topology, levels, send.asSlice(0, n), recv.asSlice(0, n), count, k, avg);
            } else if (algo == Tuner.Algo.RING) {
                Reductions.ringAllReduce(l, send.asSlice(0, n), recv.asSlice(0, n), count, k, chunk, avg);
            } else {
                if (!send.equals(recv)) MemorySegment.copy(send, 0, recv, 0, n);
                if (algo == Tuner.Algo.RECURSIVE_DOUBLING) Reductions.recursiveDoubling(l, recv.asSlice(0, n), count, k, avg);
                else HalvingDoubling.allReduce(l, recv.asSlice(0, n), count, k, avg);
            }
        };
    }

    @Override
    public void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        reduce(send, recv, count, type, op, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        return reduce(send, recv, count, type, op, root, Mode.ASYNC);
    }

    CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root,
                                    Mode mode) {
        ReduceKernel k = kernel(type, op);
        checkRoot("reduce", root);
        long n = bytes("reduce", "send", send, count, type);
        if (rank == root) {
            checkBuffer("reduce", "recv", recv, n);
            checkWritable("reduce", "recv", recv);
        }
        int avg = op == ReduceOp.AVG ? size : 1;
        return zeroCopyOr("reduce", fingerprint("reduce", count, type, op, root), n, mode, Tuner.Op.REDUCE,
                (z, seq, fp, want) -> z.reduce(seq, fp, "reduce", send, recv, count, k, avg, root, want), l -> {
                    MemorySegment work = rank == root ? recv.asSlice(0, n) : l.scratch(n);
                    if (!send.equals(work)) MemorySegment.copy(send, 0, work, 0, n);
                    Reductions.binomialReduce(l, work, count, k, root, avg);
                });
    }

    @Override
    public void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        reduceScatter(send, recv, recvCount, type, op, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        return reduceScatter(send, recv, recvCount, type, op, Mode.ASYNC);
    }

    CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op,
                                           Mode mode) {
        if (recvCount < 0) throw new IllegalArgumentException("rank " + rank + ": reduceScatter: recvCount " + recvCount + " must be >= 0");
        ZeroCopyEngine z = zc;
        if (z == null) {
            long[] counts = new long[size];
            java.util.Arrays.fill(counts, recvCount);
            return reduceScatterBlocks("reduceScatter", send, recv, counts, type, op, mode);
        }
        // equal blocks without arrays: the zero-copy path allocates nothing
        ReduceKernel k = kernel(type, op);
        long es = type.byteSize();
        long blk = Math.multiplyExact(recvCount, es);
        long total = Math.multiplyExact(blk, size);
        checkBuffer("reduceScatter", "send", send, total);
        checkBuffer("reduceScatter", "recv", recv, blk);
        checkWritable("reduceScatter", "recv", recv);
        int fp = fingerprint("reduceScatter", equalCountsHash(recvCount), type, op, -1);
        return reduceScatterZc(z, "reduceScatter", fp, send, recv, recvCount, null, type, k, op, mode);
    }

    /** {@code Arrays.hashCode} of {@code size} counts equal to {@code count}, without the array. */
    private int equalCountsHash(long count) {
        int h = 1;
        int e = (int) (count ^ (count >>> 32));
        for (int r = 0; r < size; r++) h = 31 * h + e;
        return h;
    }

    private CommFuture<Void> reduceScatterZc(ZeroCopyEngine z, String name, int fp, MemorySegment send, MemorySegment recv, long blockCount,
                                             long[] counts, DataType type, ReduceKernel k, ReduceOp op, Mode mode) {
        checkUsable(name);
        int avg = op == ReduceOp.AVG ? size : 1;
        long seq = collectiveSeq.incrementAndGet(); // also the op's zero-copy ticket
        if (!mode.async) {
            reduceScatterHere(z, seq, name, fp, send, recv, blockCount, counts, type, k, avg);
            return null;
        }
        return dispatch(z, seq, name, mode, () -> reduceScatterHere(z, seq, name, fp, send, recv, blockCount, counts, type, k, avg));
    }

    private void reduceScatterHere(ZeroCopyEngine z, long seq, String name, int fp, MemorySegment send, MemorySegment recv,
                                   long blockCount, long[] counts, DataType type, ReduceKernel k, int avg) {
        z.enter(seq, name);
        try {
            if (session.config().fullCheck()) fullCheck(seq, name, fp);
            long t0 = System.nanoTime();
            CollectiveEvent ev = CollectiveEvent.wanted() ? new CollectiveEvent() : null;
            if (ev != null) ev.begin();
            long bytes = 0;
            if (counts == null) bytes = blockCount * size * type.byteSize();
            else for (long x : counts) bytes += x * type.byteSize();
            z.opBytes(bytes);
            if (z.reduceScatter(seq, fp, name, send, recv, blockCount, counts, k, avg, tuner().forced(Tuner.Op.REDUCESCATTER) == null)) {
                zeroCopyDone(ev, seq, name, bytes, t0);
            } else {
                long[] c = counts;
                if (c == null) {
                    c = new long[size];
                    java.util.Arrays.fill(c, blockCount);
                }
                runCollective(seq, name, fp, bytes, reduceScatterBody(send, recv, c, type, k, avg), true);
            }
        } catch (io.hcomm4j.PeerFailedException e) {
            throw zeroCopyFailure(seq, name, e);
        } finally {
            z.leave(seq);
        }
    }

    @Override
    public void reduceScatterV(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op) {
        reduceScatterBlocks("reduceScatterV", send, recv, recvCounts, type, op, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceScatterVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op) {
        return reduceScatterBlocks("reduceScatterV", send, recv, recvCounts, type, op, Mode.ASYNC);
    }

    CommFuture<Void> reduceScatterBlocks(String name, MemorySegment send, MemorySegment recv, long[] recvCounts,
                                                 DataType type, ReduceOp op, Mode mode) {
        ReduceKernel k = kernel(type, op);
        long[] sizes = sizesOf(name, java.util.Objects.requireNonNull(recvCounts, "recvCounts"), type);
        long total = 0;
        for (long c : recvCounts) total = Math.addExact(total, c);
        total = Math.multiplyExact(total, type.byteSize());
        checkBuffer(name, "send", send, total);
        checkBuffer(name, "recv", recv, sizes[rank]);
        checkWritable(name, "recv", recv);
        int fp = fingerprint(name, java.util.Arrays.hashCode(recvCounts), type, op, -1);
        ZeroCopyEngine z = zc;
        long[] counts = recvCounts.clone();
        if (z != null) return reduceScatterZc(z, name, fp, send, recv, 0, counts, type, k, op, mode);
        int avg = op == ReduceOp.AVG ? size : 1;
        return collective(name, fp, mode, reduceScatterBody(send, recv, counts, type, k, avg));
    }

    /** The transport algorithm of a reduce-scatter (the tuner's choice). */
    private Consumer<CollectiveLinks> reduceScatterBody(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type,
                                                        ReduceKernel k, int avg) {
        long[] at = new long[size + 1];
        for (int r = 0; r < size; r++) at[r + 1] = at[r] + recvCounts[r];
        long es = type.byteSize();
        long total = at[size] * es;
        long mine = recvCounts[rank] * es;
        long chunk = ringChunkElems(total / size, (int) es);
        Tuner.Algo algo = tuner().choose(Tuner.Op.REDUCESCATTER, total, shape);
        Tuner.Levels levels = algo == Tuner.Algo.HIERARCHICAL ? tuner().levels(Tuner.Op.REDUCESCATTER, total, shape, topology.localSize()) : null;
        long[] counts = recvCounts.clone();
        return l -> {
            if (algo == Tuner.Algo.HIERARCHICAL) {
                Hierarchical.reduceScatter(l, topology, levels, send, recv, counts, k, avg);
                return;
            }
            MemorySegment work = l.scratch(total);
            if (algo == Tuner.Algo.HALVING_DOUBLING) {
                MemorySegment.copy(send, 0, work, 0, total);
                HalvingDoubling.reduceScatter(l, work, at, k, avg);
            } else {
                Reductions.ringReduceScatter(l, send.asSlice(0, total), work, at, k, chunk, avg);
            }
            MemorySegment.copy(work, at[rank] * es, recv, 0, mine);
        };
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
        long n = bytes("broadcast", "buf", buf, count, type);
        checkRoot("broadcast", root);
        if (rank != root && buf.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": broadcast: buf is read-only");
        int fp = fingerprint("broadcast", count, type, null, root);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("broadcast", fp, mode, broadcastBody(buf, n, root));
        checkUsable("broadcast");
        long seq = collectiveSeq.incrementAndGet(); // also the op's zero-copy ticket
        if (!mode.async) {
            broadcastHere(z, seq, fp, buf, n, root);
            return null;
        }
        return dispatch(z, seq, "broadcast", mode, () -> broadcastHere(z, seq, fp, buf, n, root));
    }

    private void broadcastHere(ZeroCopyEngine z, long seq, int fp, MemorySegment buf, long n, int root) {
        z.enter(seq, "broadcast");
        try {
            if (session.config().fullCheck()) fullCheck(seq, "broadcast", fp);
            long t0 = System.nanoTime();
            CollectiveEvent ev = CollectiveEvent.wanted() ? new CollectiveEvent() : null;
            if (ev != null) ev.begin();
            z.opBytes(n);
            if (z.broadcast(seq, fp, "broadcast", buf, n, root, tuner().forced(Tuner.Op.BROADCAST) == null)) {
                zeroCopyDone(ev, seq, "broadcast", n, t0);
            } else {
                runCollective(seq, "broadcast", fp, n, broadcastBody(buf, n, root), true);
            }
        } catch (io.hcomm4j.PeerFailedException e) {
            throw zeroCopyFailure(seq, "broadcast", e);
        } finally {
            z.leave(seq);
        }
    }

    /** The transport algorithm of a broadcast (the tuner's choice). */
    private Consumer<CollectiveLinks> broadcastBody(MemorySegment buf, long n, int root) {
        MemorySegment data = buf.asSlice(0, n);
        Tuner.Algo algo = size <= 2 && tuner().forced(Tuner.Op.BROADCAST) == null ? Tuner.Algo.TREE
                : tuner().choose(Tuner.Op.BROADCAST, n, shape);
        Tuner.Levels levels = algo == Tuner.Algo.HIERARCHICAL ? tuner().levels(Tuner.Op.BROADCAST, n, shape, topology.localSize()) : null;
        return l -> {
            if (algo == Tuner.Algo.HIERARCHICAL) Hierarchical.broadcast(l, topology, levels, data, root);
            else if (algo == Tuner.Algo.TREE) Broadcast.binomialTree(l, data, root);
            else Broadcast.pipelinedChain(l, data, root, BCAST_CHUNK);
        };
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
        long blk = bytes("allGather", "send", send, count, type);
        checkBuffer("allGather", "recv", recv, Math.multiplyExact(blk, size));
        int fp = fingerprint("allGather", count, type, null, -1);
        // in place (send is recv): this rank's block of recv is what it contributes
        boolean inPlace = send.equals(recv);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("allGather", fp, mode, allGatherBody(send, recv, blk, null, null, inPlace, "allGather"));
        return allGatherZc(z, "allGather", fp, inPlace ? recv : send, inPlace ? rank * blk : 0, recv, blk, null, null, mode);
    }

    private CommFuture<Void> allGatherZc(ZeroCopyEngine z, String name, int fp, MemorySegment mine, long mineOff, MemorySegment recv,
                                         long blk, long[] off, long[] len, Mode mode) {
        checkUsable(name);
        long seq = collectiveSeq.incrementAndGet(); // also the op's zero-copy ticket
        if (!mode.async) {
            allGatherHere(z, seq, name, fp, mine, mineOff, recv, blk, off, len);
            return null;
        }
        return dispatch(z, seq, name, mode, () -> allGatherHere(z, seq, name, fp, mine, mineOff, recv, blk, off, len));
    }

    private void allGatherHere(ZeroCopyEngine z, long seq, String name, int fp, MemorySegment mine, long mineOff,
                               MemorySegment recv, long blk, long[] off, long[] len) {
        z.enter(seq, name);
        try {
            if (session.config().fullCheck()) fullCheck(seq, name, fp);
            long t0 = System.nanoTime();
            CollectiveEvent ev = CollectiveEvent.wanted() ? new CollectiveEvent() : null;
            if (ev != null) ev.begin();
            long bytes = 0;
            if (len == null) bytes = blk * size;
            else for (long x : len) bytes += x;
            z.opBytes(bytes);
            if (z.allGather(seq, fp, name, mine, mineOff, recv, blk, off, len, tuner().forced(Tuner.Op.ALLGATHER) == null)) {
                zeroCopyDone(ev, seq, name, bytes, t0);
            } else {
                boolean inPlace = mine == recv && mineOff == (off == null ? rank * blk : off[rank]);
                runCollective(seq, name, fp, bytes, allGatherBody(mine, recv, blk, off, len, inPlace, name), true);
            }
        } catch (io.hcomm4j.PeerFailedException e) {
            throw zeroCopyFailure(seq, name, e);
        } finally {
            z.leave(seq);
        }
    }

    /**
     * The transport algorithm of an all-gather of equal blocks of {@code blk} bytes ({@code off == null}; the tuner's
     * choice) or of the blocks {@code off}/{@code len} (ring). {@code send} is the contribution, or with {@code inPlace}
     * the receive buffer holding it in this rank's block.
     */
    private Consumer<CollectiveLinks> allGatherBody(MemorySegment send, MemorySegment recv, long blk, long[] off, long[] len,
                                                    boolean inPlace, String name) {
        long[] o = off;
        long[] l2 = len;
        if (o == null) {
            o = new long[size];
            l2 = new long[size];
            for (int r = 0; r < size; r++) {
                o[r] = r * blk;
                l2[r] = blk;
            }
        }
        long[] fo = o;
        long[] fl = l2;
        MemorySegment own = recv.asSlice(fo[rank], fl[rank]);
        MemorySegment mine = inPlace ? own : send;
        Tuner.Algo algo = off == null ? tuner().choose(Tuner.Op.ALLGATHER, blk * size, shape) : Tuner.Algo.RING;
        Tuner.Levels levels = algo == Tuner.Algo.HIERARCHICAL ? tuner().levels(Tuner.Op.ALLGATHER, blk * size, shape, topology.localSize()) : null;
        return l -> {
            if (algo == Tuner.Algo.HIERARCHICAL) {
                Hierarchical.allGather(l, topology, levels, mine.asSlice(0, blk), recv, blk);
                return;
            }
            MemorySegment.copy(mine, 0, own, 0, fl[rank]);
            if (algo == Tuner.Algo.BRUCK) AllGather.bruck(l, recv, blk);
            else AllGather.ring(l, recv, fo, fl);
        };
    }

    @Override
    public void allGatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type) {
        allGatherV(send, recv, recvCounts, displs, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allGatherVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type) {
        return allGatherV(send, recv, recvCounts, displs, type, Mode.ASYNC);
    }

    CommFuture<Void> allGatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs,
                                        DataType type, Mode mode) {
        long[][] b = blocks("allGatherV", "recv", recv, recvCounts, displs, type);
        long[] off = b[0];
        long[] len = b[1];
        boolean inPlace = send.equals(recv);
        checkBuffer("allGatherV", "send", inPlace ? recv.asSlice(off[rank], len[rank]) : send, len[rank]);
        int fp = fingerprint("allGatherV", java.util.Arrays.hashCode(recvCounts), type, null, -1);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("allGatherV", fp, mode, allGatherBody(send, recv, 0, off, len, inPlace, "allGatherV"));
        return allGatherZc(z, "allGatherV", fp, inPlace ? recv : send, inPlace ? off[rank] : 0, recv, 0, off, len, mode);
    }

    @Override
    public void gather(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        gather(send, recv, count, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> gatherAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        return gather(send, recv, count, type, root, Mode.ASYNC);
    }

    CommFuture<Void> gather(MemorySegment send, MemorySegment recv, long count, DataType type, int root, Mode mode) {
        checkRoot("gather", root);
        long blk = bytes("gather", "send", send, count, type);
        if (rank == root) checkBuffer("gather", "recv", recv, Math.multiplyExact(blk, size));
        return zeroCopyOr("gather", fingerprint("gather", count, type, null, root), blk * size, mode, Tuner.Op.GATHER,
                (z, seq, fp, want) -> z.gather(seq, fp, "gather", send, recv, blk, root, want),
                l -> Rooted.gatherBinomial(l, send, rank == root ? recv : null, root, blk));
    }

    @Override
    public void gatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type, int root) {
        gatherV(send, recv, recvCounts, displs, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> gatherVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs,
                                         DataType type, int root) {
        return gatherV(send, recv, recvCounts, displs, type, root, Mode.ASYNC);
    }

    CommFuture<Void> gatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs,
                                     DataType type, int root, Mode mode) {
        checkRoot("gatherV", root);
        java.util.Objects.requireNonNull(recvCounts, "recvCounts");
        long[][] b = rank == root ? blocks("gatherV", "recv", recv, recvCounts, displs, type)
                : new long[][] {new long[size], sizesOf("gatherV", recvCounts, type)};
        checkBuffer("gatherV", "send", send, b[1][rank]);
        long total = 0;
        for (long l : b[1]) total += l;
        return zeroCopyOr("gatherV", fingerprint("gatherV", 0, type, null, root), total, mode, Tuner.Op.GATHER,
                (z, seq, fp, want) -> z.gatherV(seq, fp, "gatherV", send, recv, b[0], b[1], root, want),
                l -> Rooted.gatherLinear(l, send, recv, root, b[0], b[1]));
    }

    private long[] sizesOf(String op, long[] counts, DataType type) {
        if (counts.length != size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": counts need " + size + " entries, have " + counts.length);
        }
        long[] len = new long[size];
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0) throw new IllegalArgumentException("rank " + rank + ": " + op + ": counts[" + r + "] = " + counts[r] + " must be >= 0");
            len[r] = Math.multiplyExact(counts[r], type.byteSize());
        }
        return len;
    }

    @Override
    public void scatter(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        scatter(send, recv, count, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> scatterAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        return scatter(send, recv, count, type, root, Mode.ASYNC);
    }

    CommFuture<Void> scatter(MemorySegment send, MemorySegment recv, long count, DataType type, int root, Mode mode) {
        checkRoot("scatter", root);
        long blk = bytes("scatter", "recv", recv, count, type);
        if (rank == root) checkBuffer("scatter", "send", send, Math.multiplyExact(blk, size));
        return zeroCopyOr("scatter", fingerprint("scatter", count, type, null, root), blk * size, mode, Tuner.Op.SCATTER,
                (z, seq, fp, want) -> z.scatter(seq, fp, "scatter", send, recv, blk, root, want),
                l -> Rooted.scatterBinomial(l, rank == root ? send : null, recv, root, blk));
    }

    @Override
    public void scatterV(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv, DataType type, int root) {
        scatterV(send, sendCounts, displs, recv, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> scatterVAsync(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv,
                                          DataType type, int root) {
        return scatterV(send, sendCounts, displs, recv, type, root, Mode.ASYNC);
    }

    CommFuture<Void> scatterV(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv,
                                      DataType type, int root, Mode mode) {
        checkRoot("scatterV", root);
        java.util.Objects.requireNonNull(sendCounts, "sendCounts");
        long[][] b = rank == root ? blocks("scatterV", "send", send, sendCounts, displs, type)
                : new long[][] {new long[size], sizesOf("scatterV", sendCounts, type)};
        checkBuffer("scatterV", "recv", recv, b[1][rank]);
        long total = 0;
        for (long l : b[1]) total += l;
        return zeroCopyOr("scatterV", fingerprint("scatterV", 0, type, null, root), total, mode, Tuner.Op.SCATTER,
                (z, seq, fp, want) -> z.scatterV(seq, fp, "scatterV", send, b[0], b[1], recv, root, want),
                l -> Rooted.scatterLinear(l, send, recv, root, b[0], b[1]));
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
        long blk = Math.multiplyExact(count < 0 ? 0 : count, type.byteSize());
        if (count < 0) throw new IllegalArgumentException("rank " + rank + ": allToAll: count " + count + " must be >= 0");
        long total = Math.multiplyExact(blk, size);
        checkBuffer("allToAll", "send", send, total);
        checkBuffer("allToAll", "recv", recv, total);
        long[] off = new long[size];
        long[] len = new long[size];
        for (int r = 0; r < size; r++) {
            off[r] = r * blk;
            len[r] = blk;
        }
        return allToAllBlocks("allToAll", send, off, len, recv, off, len, total, mode);
    }

    @Override
    public void allToAllV(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv, long[] recvCounts,
                          long[] recvDispls, DataType type) {
        allToAllV(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allToAllVAsync(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv,
                                           long[] recvCounts, long[] recvDispls, DataType type) {
        return allToAllV(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, Mode.ASYNC);
    }

    CommFuture<Void> allToAllV(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv,
                                       long[] recvCounts, long[] recvDispls, DataType type, Mode mode) {
        long[][] s = blocks("allToAllV", "send", send, sendCounts, sendDispls, type);
        long[][] r = blocks("allToAllV", "recv", recv, recvCounts, recvDispls, type);
        if (s[1][rank] != r[1][rank]) {
            throw new IllegalArgumentException("rank " + rank + ": allToAllV: sendCounts[" + rank + "] and recvCounts[" + rank
                    + "] (this rank's block to itself) differ");
        }
        long total = 0;
        for (int i = 0; i < size; i++) total = Math.max(total, s[0][i] + s[1][i]);
        return allToAllBlocks("allToAllV", send, s[0], s[1], recv, r[0], r[1], total, mode);
    }

    CommFuture<Void> allToAllBlocks(String op, MemorySegment send, long[] sOff, long[] sLen, MemorySegment recv,
                                            long[] rOff, long[] rLen, long sendBytes, Mode mode) {
        boolean overlap = send.asSlice(0, sendBytes).asOverlappingSlice(recv).isPresent();
        // Bruck needs equal blocks: allToAllV always exchanges pairwise
        Tuner.Algo algo = op.equals("allToAll") ? tuner().choose(Tuner.Op.ALLTOALL, sendBytes, size) : Tuner.Algo.PAIRWISE;
        int fp = fingerprint(op, op.equals("allToAll") ? sLen[0] : 0, null, null, -1);
        Consumer<CollectiveLinks> body = l -> {
            if (algo == Tuner.Algo.BRUCK) {
                AllToAll.bruck(l, send, recv, sLen[0]); // reads all of send before writing recv: in place needs no copy
                return;
            }
            MemorySegment src = send;
            if (overlap) {
                // in place: the blocks still to be sent must not be overwritten by those arriving
                src = l.scratch(sendBytes);
                MemorySegment.copy(send, 0, src, 0, sendBytes);
            }
            AllToAll.pairwise(l, src, sOff, sLen, recv, rOff, rLen);
        };
        if (!op.equals("allToAll")) {
            long recvBytes = 0;
            for (int i = 0; i < size; i++) recvBytes = Math.max(recvBytes, rOff[i] + rLen[i]);
            long rb = recvBytes;
            return zeroCopyOr(op, fp, sendBytes, mode, Tuner.Op.ALLTOALL,
                    (z, seq, f, want) -> z.allToAllV(seq, f, op, send, sOff, sLen, sendBytes, recv, rOff, rLen, rb, want), body);
        }
        long blk = sLen[0];
        return zeroCopyOr(op, fp, sendBytes, mode, Tuner.Op.ALLTOALL,
                (z, seq, f, want) -> z.allToAll(seq, f, op, send, recv, blk, want), body);
    }

    /** One host's part of a collective that may run in shared memory: true if it ran there (every rank decides alike). */
    private interface ZeroCopyStep {
        boolean run(ZeroCopyEngine z, long seq, int fingerprint, boolean want);
    }

    /**
     * Runs a collective in shared memory ({@code step}) when the communicator has a zero-copy engine and every rank can,
     * else through the transport ({@code body}), under one sequence number (its ticket) either way. For the ops whose
     * zero-copy form is rare enough that a capturing lambda per call is fine (gather, scatter, all-to-all); the hot
     * ones have allocation-free copies of this frame (allReduceHere and the like).
     */
    private CommFuture<Void> zeroCopyOr(String op, int fp, long bytes, Mode mode, Tuner.Op tunerOp, ZeroCopyStep step,
                                        Consumer<CollectiveLinks> body) {
        ZeroCopyEngine z = zc;
        if (z == null) return collective(op, fp, bytes, mode, body);
        checkUsable(op);
        long seq = collectiveSeq.incrementAndGet(); // also the op's zero-copy ticket
        Runnable task = () -> {
            z.enter(seq, op);
            try {
                if (session.config().fullCheck()) fullCheck(seq, op, fp);
                long t0 = System.nanoTime();
                CollectiveEvent ev = CollectiveEvent.wanted() ? new CollectiveEvent() : null;
                if (ev != null) ev.begin();
                z.opBytes(bytes);
                if (step.run(z, seq, fp, tuner().forced(tunerOp) == null)) zeroCopyDone(ev, seq, op, bytes, t0);
                else runCollective(seq, op, fp, bytes, body, true);
            } catch (io.hcomm4j.PeerFailedException e) {
                throw zeroCopyFailure(seq, op, e);
            } finally {
                z.leave(seq);
            }
        };
        if (!mode.async) {
            task.run();
            return null;
        }
        return dispatch(z, seq, op, mode, task);
    }

    @Override
    public void barrier() {
        barrier(Mode.BLOCKING);
    }

    CommFuture<Void> barrier(Mode mode) {
        int fp = fingerprint("barrier", 0, null, null, -1);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("barrier", fp, mode, AllToAll::barrier);
        checkUsable("barrier");
        long seq = collectiveSeq.incrementAndGet(); // also the op's zero-copy ticket
        if (!mode.async) {
            barrierHere(z, seq, fp);
            return null;
        }
        return dispatch(z, seq, "barrier", mode, () -> barrierHere(z, seq, fp));
    }

    /** A barrier under the zero-copy engine: every rank's descriptor visible is the barrier. */
    private void barrierHere(ZeroCopyEngine z, long seq, int fp) {
        z.enter(seq, "barrier");
        try {
            if (session.config().fullCheck()) fullCheck(seq, "barrier", fp);
            long t0 = System.nanoTime();
            CollectiveEvent ev = CollectiveEvent.wanted() ? new CollectiveEvent() : null;
            if (ev != null) ev.begin();
            z.opBytes(0);
            if (z.barrier(seq, fp, "barrier")) zeroCopyDone(ev, seq, "barrier", 0, t0);
            else runCollective(seq, "barrier", fp, 0, AllToAll::barrier, true);
        } catch (io.hcomm4j.PeerFailedException e) {
            throw zeroCopyFailure(seq, "barrier", e);
        } finally {
            z.leave(seq);
        }
    }

    @Override
    public CommFuture<Void> barrierAsync() {
        return barrier(Mode.ASYNC);
    }

    // ------------------------------------------------------------------------------- sub-communicators

    @Override
    public Communicator split(int color, int key) {
        checkOpen();
        if (color < 0 && color != UNDEFINED) {
            throw new IllegalArgumentException("rank " + rank + ": split: color " + color + " must be >= 0 or UNDEFINED");
        }
        long child = children.incrementAndGet();
        // the one exchange: every rank's (color, key)
        MemorySegment mine = MemorySegment.ofArray(new int[] {color, key});
        int[] all = new int[2 * size];
        allGather(mine, MemorySegment.ofArray(all), 2, DataType.INT32);
        if (color == UNDEFINED) return null;
        Integer[] members = java.util.stream.IntStream.range(0, size).filter(r -> all[2 * r] == color).boxed()
                .sorted(java.util.Comparator.<Integer>comparingInt(r -> all[2 * r + 1]).thenComparingInt(r -> r))
                .toArray(Integer[]::new);
        int[] worldRanks = new int[members.length];
        int[] commRanks = new int[members.length];
        int myRank = -1;
        for (int i = 0; i < members.length; i++) {
            worldRanks[i] = world(members[i]);
            commRanks[i] = members[i];
            if (members[i] == rank) myRank = i;
        }
        return child(childId(child, color), myRank, worldRanks, topology.restrict(myRank, commRanks));
    }

    @Override
    public Communicator dup() {
        checkOpen();
        long child = children.incrementAndGet();
        barrier(); // collective, like MPI_Comm_dup: every rank takes the same child number
        int[] worldRanks = new int[size];
        for (int r = 0; r < size; r++) worldRanks[r] = world(r);
        return child(childId(child, Integer.MAX_VALUE), rank, worldRanks, topology);
    }

    /** Shrinks of this communicator so far: names the shrink's keys in the store, so every survivor uses the same ones. */
    private final AtomicLong shrinks = new AtomicLong();

    @Override
    public Communicator shrink() {
        checkOpen();
        long k = shrinks.incrementAndGet();
        long t0 = System.nanoTime();
        long deadline = t0 + timeoutNanos();
        io.hcomm4j.bootstrap.Store store = session.store();
        String prefix = session.namespace() + "shrink/" + Long.toUnsignedString(commId, 16) + "/" + k + "/";
        String decisionKey = prefix + "decision";
        java.util.BitSet known = knownFailed();
        byte[] decision = null;
        java.util.BitSet published = null;
        long sleepMicros = 200;
        while (true) {
            // publish what this rank knows (again when it learned more): the others adopt it
            if (!known.equals(published)) {
                store.set(prefix + "seen/" + rank, encodeRanks(known));
                published = (java.util.BitSet) known.clone();
            }
            decision = store.tryGet(decisionKey);
            if (decision != null) break;
            java.util.List<Integer> missing = new java.util.ArrayList<>();
            for (int m = 0; m < size; m++) {
                if (m == rank || known.get(m)) continue;
                byte[] seen = store.tryGet(prefix + "seen/" + m);
                if (seen == null) missing.add(m);
                else known.or(decodeRanks(seen));
            }
            known.or(knownFailed());
            missing.removeIf(known::get);
            if (missing.isEmpty() && !known.get(rank)) {
                // every member not known to have failed is here: propose; the first proposal decides for everybody
                decision = store.compareAndSet(decisionKey, null, encodeRanks(known));
                if (decision != null) break;
            }
            if (known.get(rank)) {
                decision = store.get(decisionKey, java.time.Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                break;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": shrink of a communicator of " + size + " ranks: "
                        + (missing.size() == 1 ? "rank " + missing.get(0) + " has" : "ranks " + missing + " have")
                        + " neither called shrink nor been found failed within " + session.config().timeout() + " (HCOMM_TIMEOUT)");
            }
            java.util.concurrent.locks.LockSupport.parkNanos(sleepMicros * 1000);
            sleepMicros = Math.min(20_000, sleepMicros * 2);
        }
        java.util.BitSet failedSet = decodeRanks(decision);
        if (failedSet.get(rank)) {
            throw new io.hcomm4j.CommAbortedException("rank " + rank + ": shrink: the other members decided that this rank failed "
                    + "(failed set " + failedSet + "); it is not a member of the shrunk communicator");
        }
        int live = size - failedSet.cardinality();
        int[] worldRanks = new int[live];
        int[] commRanks = new int[live];
        int myRank = -1;
        for (int r = 0, i = 0; r < size; r++) {
            if (failedSet.get(r)) continue;
            if (r == rank) myRank = i;
            worldRanks[i] = world(r);
            commRanks[i++] = r;
        }
        long id = childId(k | (1L << 40), java.util.Arrays.hashCode(decision));
        CommunicatorImpl c = child(id, myRank, worldRanks, topology.restrict(myRank, commRanks));
        org.slf4j.LoggerFactory.getLogger(CommunicatorImpl.class).debug("rank {}: shrink of {} ranks to {} (failed {}) took {} ms",
                rank, size, live, failedSet, (System.nanoTime() - t0) / 1_000_000);
        return c;
    }

    /** Grows of this communicator so far: names the grow's key in the store. */
    private final AtomicLong grows = new AtomicLong();

    @Override
    public Communicator grow(int joiners) {
        checkOpen();
        if (joiners < 1) throw new IllegalArgumentException("rank " + rank + ": grow: joiners " + joiners + " must be >= 1");
        RuntimeException broken = brokenFor("grow", "");
        if (broken != null) throw broken;
        long k = grows.incrementAndGet();
        long t0 = System.nanoTime();
        io.hcomm4j.bootstrap.Store store = session.store();
        String ns = session.namespace();
        java.time.Duration timeout = session.config().timeout();
        String roundKey = ns + "grow/comm/" + Long.toUnsignedString(commId, 16) + "/" + k;
        if (rank == 0) store.set(roundKey, String.valueOf(lead(store, ns, joiners, k, timeout)).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String g;
        try {
            g = new String(store.get(roundKey, timeout.plusSeconds(5)), java.nio.charset.StandardCharsets.UTF_8);
        } catch (io.hcomm4j.CommTimeoutException e) {
            throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": grow: rank 0 of the communicator did not say within "
                    + timeout + " (HCOMM_TIMEOUT) which processes join");
        }
        GrowPlan plan = GrowPlan.decode(store.get(ns + "grow/" + g + "/plan", timeout));
        if (plan.error() != null) throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": grow: " + plan.error());
        java.util.List<String> ready = new java.util.ArrayList<>();
        for (int slot : plan.slots()) ready.add(ns + "grow/" + g + "/ready/" + slot);
        try {
            store.await(ready, timeout);
        } catch (io.hcomm4j.CommTimeoutException e) {
            throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": grow: the joining processes (world ranks "
                    + java.util.Arrays.toString(plan.slots()) + ") did not come up within " + timeout + " (HCOMM_TIMEOUT)");
        }
        for (int i = 0; i < plan.slots().length; i++) session.revive(plan.slots()[i], plan.incarnations()[i]);
        store.add(ns + "grow/" + g + "/revived", 1);
        CommunicatorImpl c = ofGroup(session, transport, plan.id(), world(rank), plan.members(), session.hostIds());
        session.register(c);
        session.registerCommunicator(c);
        org.slf4j.LoggerFactory.getLogger(CommunicatorImpl.class).debug("rank {}: grow of {} ranks by {} took {} ms",
                rank, size, joiners, (System.nanoTime() - t0) / 1_000_000);
        return c;
    }

    /**
     * Rank 0's part of a grow: waits (up to {@code timeout}) for {@code joiners} processes registered in the store,
     * assigns them the lowest failed world slots and new incarnations, publishes the plan and tells each joiner its
     * round. Returns the round.
     */
    private long lead(io.hcomm4j.bootstrap.Store store, String ns, int joiners, long k, java.time.Duration timeout) {
        long round = store.add(ns + "grow/round", 1);
        String planKey = ns + "grow/" + round + "/plan";
        byte[] takenV = store.tryGet(ns + "grow/taken");
        long taken = takenV == null ? 0 : Long.parseLong(new String(takenV, java.nio.charset.StandardCharsets.UTF_8));
        java.util.List<Integer> free = new java.util.ArrayList<>();
        java.util.Set<Integer> mine = new java.util.HashSet<>();
        for (int r = 0; r < size; r++) mine.add(world(r));
        for (int w : transport.failedRanks()) if (!mine.contains(w)) free.add(w);
        if (free.size() < joiners) {
            store.set(planKey, GrowPlan.failed("only " + free.size() + " failed world ranks " + free + " can be taken over, not "
                    + joiners + " (a job grows back to its initial size at most)").encode());
            return round;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        long sleep = 1;
        while (true) {
            byte[] v = store.tryGet(ns + "grow/joiners");
            long arrived = v == null ? 0 : Long.parseLong(new String(v, java.nio.charset.StandardCharsets.UTF_8));
            if (arrived - taken >= joiners) break;
            if (System.nanoTime() > deadline) {
                store.set(planKey, GrowPlan.failed("only " + (arrived - taken) + " of " + joiners + " joining processes registered within "
                        + timeout + " (HCOMM_TIMEOUT); start them with Hcomm.join").encode());
                return round;
            }
            try {
                Thread.sleep(sleep);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new io.hcomm4j.HcommException("rank " + rank + ": grow: interrupted", e);
            }
            sleep = Math.min(20, sleep * 2);
        }
        long[] tickets = new long[joiners];
        int[] slots = new int[joiners];
        long[] incs = new long[joiners];
        int[] members = new int[size + joiners];
        for (int r = 0; r < size; r++) members[r] = world(r);
        for (int i = 0; i < joiners; i++) {
            tickets[i] = taken + 1 + i;
            slots[i] = free.get(i);
            incs[i] = store.add(ns + "incarnation/" + slots[i], 1);
            members[size + i] = slots[i];
        }
        store.add(ns + "grow/taken", joiners);
        long id = childId(round | (2L << 40), java.util.Arrays.hashCode(members));
        store.set(planKey, new GrowPlan(id, tickets, slots, incs, members, null).encode());
        for (long t : tickets) store.set(ns + "grow/ticket/" + t, String.valueOf(round).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return round;
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

    /** Members known here to have failed (this communicator's ranks): its failed members and the transport's failed ranks. */
    private java.util.BitSet knownFailed() {
        java.util.BitSet b = new java.util.BitSet(size);
        synchronized (healthLock) {
            for (int r : failedMembers) b.set(r);
        }
        for (int w : transport.failedRanks()) {
            int r = commRank(w);
            if (r >= 0) b.set(r);
        }
        return b;
    }

    private static byte[] encodeRanks(java.util.BitSet b) {
        return b.stream().mapToObj(Integer::toString).collect(java.util.stream.Collectors.joining(",", "[", "]"))
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static java.util.BitSet decodeRanks(byte[] v) {
        String s = new String(v, java.nio.charset.StandardCharsets.UTF_8);
        java.util.BitSet b = new java.util.BitSet();
        s = s.substring(1, s.length() - 1).trim();
        if (!s.isEmpty()) for (String x : s.split(",")) b.set(Integer.parseInt(x.trim()));
        return b;
    }

    /** A child's id: derived from this id, the child number and the color, so every member computes the same one. */
    private long childId(long child, int color) {
        long h = commId * 0x9E3779B97F4A7C15L + child * 0xC2B2AE3D27D4EB4FL + color * 0x165667B19E3779F9L + 1;
        h ^= h >>> 31;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 29;
        return h & ~(3L << 62); // the top bits mark collective traffic
    }

    private CommunicatorImpl child(long id, int myRank, int[] worldRanks, Topology topo) {
        CommunicatorImpl c = new CommunicatorImpl(session, transport, id, myRank, worldRanks, worldRanks.length, topo);
        session.register(c);
        session.registerCommunicator(c);
        return c;
    }

    @Override
    public io.hcomm4j.Batch batch() {
        checkOpen();
        return new BatchImpl(this);
    }

    @Override
    public io.hcomm4j.memory.MemoryPool memory() {
        return session.memory();
    }

    @Override
    public Stream newStream() {
        checkOpen();
        StreamImpl s = new StreamImpl(this, session);
        session.register(s);
        return s;
    }

    private void checkShared(MemorySegment buf, String op) {
        if (!buf.scope().isAlive()) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": buf belongs to a closed arena");
        }
        if (!transport.usableFromAnyThread(buf)) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": buf is confined to the thread that allocated it "
                    + "(Arena.ofConfined()); the library's threads move the data, so allocate it with Arena.ofShared(), "
                    + "Arena.ofAuto() or Arena.global()");
        }
    }

    long timeoutNanos() {
        return session.config().timeout().toNanos();
    }

    private void checkOpen() {
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
        shutdownCollectiveThread();
        if (zc != null) zc.close();
    }

    private synchronized void shutdownCollectiveThread() {
        if (collectiveThread != null) {
            collectiveThread.shutdown();
            try {
                collectiveThread.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            collectiveThread.shutdownNow();
        }
    }

    @Override
    public void close() {
        closed = true;
        shutdownCollectiveThread();
        if (zc != null) zc.close();
        if (group != null) {
            session.unregister(this);
            session.unregisterCommunicator(this);
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

    /** Collectives called on this communicator so far (the sequence number of the last one). */
    long collectivesCalled() {
        return collectiveSeq.get();
    }

    /** The collectives running now. */
    /** What this rank waits for in a zero-copy op of this communicator now, or null. */
    ZeroCopyEngine.Wait zeroCopyWait() {
        ZeroCopyEngine z = zc;
        return z == null ? null : z.currentWait();
    }

    /** The zero-copy engine, or null. */
    ZeroCopyEngine zeroCopyEngine() {
        return zc;
    }

    java.util.Collection<TransportLinks> running() {
        return running;
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
        return metrics.snapshot(java.util.Set.of("send", "recv"));
    }

    @Override
    public io.hcomm4j.Health health() {
        return health;
    }

    @Override
    public void addHealthListener(java.util.function.Consumer<io.hcomm4j.Health> listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    @Override
    public void removeHealthListener(java.util.function.Consumer<io.hcomm4j.Health> listener) {
        listeners.remove(listener);
    }

    @Override
    public void abort() {
        if (session.isClosed()) return;
        if (!markAborted("rank " + rank + " aborted the communicator (comm.abort())", false)) return;
        transport.sendAbort(commId, worldRanks());
    }

    /** World rank {@code from} aborted this communicator. */
    void onAbortNotice(int from) {
        markAborted("rank " + commRank(from) + " aborted the communicator (comm.abort())", false);
    }

    /** Another rank declared this one failed: nothing on this communicator can work any more. */
    void onDeclaredFailed(String why) {
        markAborted(why, false);
    }

    /**
     * Makes the communicator FAILED: every pending op on it fails with {@link io.hcomm4j.CommAbortedException}, later
     * ones too. Returns false if it was already.
     */
    private boolean markAborted(String why, boolean quiet) {
        io.hcomm4j.Health now;
        synchronized (healthLock) {
            if (abortedWhy != null) return false;
            abortedWhy = why;
            now = new io.hcomm4j.Health(io.hcomm4j.Health.State.FAILED, java.util.List.copyOf(failedMembers), why);
            health = now;
        }
        String msg = "rank " + rank + ": the communicator was aborted: " + why;
        for (TransportLinks l : running) l.abort(new io.hcomm4j.CommAbortedException("rank " + rank + ": " + l.op()
                + " (collective #" + l.seq() + ") failed: the communicator was aborted: " + why));
        transport.failCommunicator(commId, () -> new io.hcomm4j.CommAbortedException(msg));
        ZeroCopyEngine z = zc;
        if (z != null) z.abort(why);
        if (!quiet) session.healthChanged(this, now, listeners);
        return true;
    }

    /**
     * World rank {@code w} failed: if it is a member, the communicator is DEGRADED (FAILED stays FAILED), and every
     * running collective fails with {@link io.hcomm4j.PeerFailedException} listing all failed members.
     */
    void onMemberFailed(int w, String why) {
        int r = commRank(w);
        if (r < 0) return;
        io.hcomm4j.Health now;
        java.util.List<Integer> failed;
        synchronized (healthLock) {
            if (!failedMembers.add(r)) return;
            failed = java.util.List.copyOf(failedMembers);
            String reason = "rank " + r + " failed: " + why;
            now = abortedWhy != null ? new io.hcomm4j.Health(io.hcomm4j.Health.State.FAILED, failed, abortedWhy)
                    : new io.hcomm4j.Health(io.hcomm4j.Health.State.DEGRADED, failed, reason);
            health = now;
        }
        for (TransportLinks l : running) l.abort(peersFailed(l.op(), " (collective #" + l.seq() + ")", failed, "rank " + r + " failed: " + why));
        session.healthChanged(this, now, listeners);
    }

    private io.hcomm4j.PeerFailedException peersFailed(String op, String which, java.util.List<Integer> failed, String why) {
        return peersFailed(op, which, failed, why, null);
    }

    private io.hcomm4j.PeerFailedException peersFailed(String op, String which, java.util.List<Integer> failed, String why,
                                                       Throwable cause) {
        return new io.hcomm4j.PeerFailedException("rank " + rank + ": " + op + which + " on a communicator of " + size
                + " ranks cannot complete: " + (failed.size() == 1 ? "rank " + failed.get(0) + " has" : "ranks " + failed + " have")
                + " failed (" + why + ")", failed, cause);
    }

    /** The exception a new collective gets when the communicator is aborted or has failed members, else null. */
    private RuntimeException brokenFor(String op, String which) {
        String aborted = abortedWhy;
        if (aborted != null) {
            return new io.hcomm4j.CommAbortedException("rank " + rank + ": " + op + which + ": the communicator was aborted: " + aborted);
        }
        io.hcomm4j.Health h = health;
        if (h.state() == io.hcomm4j.Health.State.DEGRADED) return peersFailed(op, which, h.failedRanks(), h.reason());
        return null;
    }

    private void checkNotAborted(String op) {
        String aborted = abortedWhy;
        if (aborted != null) {
            throw new io.hcomm4j.CommAbortedException("rank " + rank + ": " + op + ": the communicator was aborted: " + aborted);
        }
    }
}
