package io.hcomm4j.comm;

import io.hcomm4j.CollectiveMismatchException;
import io.hcomm4j.CommFuture;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.ReduceFunctionException;
import io.hcomm4j.algo.AllGather;
import io.hcomm4j.monitor.OpTrace;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The one way a collective of a communicator runs, whatever the op: numbered when called (in program order on every
 * rank: the number is the tag of its messages and its zero-copy ticket), run here, on the collective thread or on a
 * stream, then: its turn, HCOMM_CHECK=full's check, the shared-memory attempt, else the transport algorithm under
 * the registry of running ops, and always the metrics and the JFR event.
 *
 * <p>The blocking path allocates nothing: the call's arguments travel in the communicator's spare
 * {@link CollectiveCall}, and the op is chosen by a switch on its {@link CollectiveOp}.
 */
final class CollectiveFrame {
    /**
     * Where a collective runs. Its sequence number is taken when it is called, so every rank numbers its collectives
     * in program order whatever thread or stream runs them.
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

    private final CommunicatorImpl comm;
    private final Session session;
    private final PeerTransport transport;
    private final long commId;
    private final int rank;
    private final int size;
    private final int[] group;
    /** Collective traffic: the communicator's id with the top bit set, apart from user point-to-point. */
    private final long collectiveChannel;
    /** Where a rank that detects a collective mismatch tells the others (tag = the op's sequence number). */
    private final long noticeChannel;
    /** HCOMM_CHECK=full's fingerprint exchange. */
    private final long checkChannel;
    /** Zero-copy collectives among the communicator's ranks, or null (not all on this host, shared memory off, one rank). */
    private final ZeroCopyEngine zc;
    private final CommunicatorHealth health;
    private final TransportCollectives algorithms;
    private final AtomicLong called = new AtomicLong();
    /** Counters per op: the collectives by ordinal, then send and recv ({@link #SEND_METRIC}, {@link #RECV_METRIC}). */
    final OpMetrics metrics = new OpMetrics(METRIC_NAMES);
    /** The flight record: the last HCOMM_TRACE_BUFFER ops of this communicator, point to point too. */
    final OpTrace trace;
    private final AtomicReference<CollectiveCall> spare = new AtomicReference<>();
    private ExecutorService collectiveThread;

    static final java.util.List<String> METRIC_NAMES;
    /** The flight record's path column. */
    private static final String ZERO_COPY = "zero_copy";
    private static final String TRANSPORT = "transport";
    static final int SEND_METRIC = CollectiveOp.values().length;
    static final int RECV_METRIC = SEND_METRIC + 1;

    static {
        java.util.List<String> names = new java.util.ArrayList<>();
        for (CollectiveOp op : CollectiveOp.values()) names.add(op.label());
        names.add("send");
        names.add("recv");
        METRIC_NAMES = java.util.List.copyOf(names);
    }

    CollectiveFrame(CommunicatorImpl comm, Session session, PeerTransport transport, long commId, int rank, int size, int[] group, ZeroCopyEngine zc,
                    CommunicatorHealth health, TransportCollectives algorithms) {
        this.comm = comm;
        this.session = session;
        this.transport = transport;
        this.commId = commId;
        this.rank = rank;
        this.size = size;
        this.group = group;
        this.collectiveChannel = commId | (1L << 62);
        this.noticeChannel = commId | (2L << 62);
        this.checkChannel = commId | (3L << 62);
        this.zc = zc;
        this.health = health;
        this.algorithms = algorithms;
        this.trace = new OpTrace(commId, rank, size, session.config().monitor().traceBuffer());
    }

    long commId() {
        return commId;
    }

    /** The transport algorithms of this communicator (tests look at their feedback). */
    TransportCollectives algorithms() {
        return algorithms;
    }

    /** Collectives called so far (the sequence number of the last one). */
    long called() {
        return called.get();
    }

    /** A call to fill: the spare one for a blocking call (a fresh one if another thread has it), a fresh one if async. */
    CollectiveCall call(Mode mode) {
        if (!mode.async) {
            CollectiveCall c = spare.getAndSet(null);
            if (c != null) return c;
        }
        return new CollectiveCall(this);
    }

    /** Runs {@code c} (filled, its arguments checked) where {@code mode} says; its future, or null if it ran here. */
    CommFuture<Void> start(CollectiveCall c, Mode mode) {
        c.high = mode.stream != null && mode.stream.priority() == io.hcomm4j.Stream.Priority.HIGH;
        if (!mode.async) {
            try {
                number(c);
                c.calledNanos = System.nanoTime(); // its flight record's start and its metrics' (one clock read)
                record(c, null, OpTrace.State.STARTED);
                runRecorded(c, false);
            } finally {
                c.clear();
                spare.set(c);
            }
            return null;
        }
        number(c);
        record(c, mode.stream, OpTrace.State.SCHEDULED);
        try {
            if (mode.stream != null) return mode.stream.enqueueCollective(c);
            c.future = new WorkerFuture<>(session.config().timeout().toNanos(), rank, c.op.label() + " #" + c.seq);
            long seq = c.seq;
            c.future.explainWith(() -> waitingFor(seq));
            collectiveThread().execute(c);
            return c.future;
        } catch (RuntimeException e) {
            giveUpTurn(c);
            throw e;
        }
    }

    /**
     * What collective {@code seq} waits for now, in words for a timeout message: "it still waits for ranks 2, 3", or
     * that it has not started (an earlier collective of the communicator still runs), or null once it is over.
     */
    String waitingFor(long seq) {
        for (TransportLinks l : health.running()) {
            if (l.seq() == seq) return describeWait(l.waitingFor(), "");
        }
        ZeroCopyEngine.Wait zw = comm.zeroCopyWait();
        if (zw != null && zw.seq() == seq) return describeWait(zw.worldPeers(), " (shared memory)");
        long started = startedUpTo;
        if (seq > started) return "it has not started: collective #" + (started + 1) + " of this communicator runs before it";
        return null;
    }

    private String describeWait(int[] worldPeers, String where) {
        if (worldPeers.length == 0) return "it waits for no rank now" + where;
        StringBuilder sb = new StringBuilder(worldPeers.length == 1 ? "it still waits for rank " : "it still waits for ranks ");
        for (int i = 0; i < worldPeers.length; i++) sb.append(i > 0 ? ", " : "").append(comm.commRank(worldPeers[i]));
        return sb.append(where).toString();
    }

    /** The highest sequence number that has started to run here (the ops run one at a time, in order). */
    private volatile long startedUpTo;

    /** Opens {@code c}'s flight record: called, queued on {@code stream} (null: none). */
    private void record(CollectiveCall c, StreamImpl stream, OpTrace.State state) {
        int root = c.fpKnown && c.fpRoot >= 0 ? c.fpRoot : -1;
        c.ticket = trace.open(OpTrace.Kind.COLLECTIVE, c.op.label(), c.seq, root, -1, c.fpType == null ? null : c.fpType.name(),
                c.fpKnown ? CollectiveOp.redopName(c.fpRedop) : null, c.fpKnown ? c.fpCount : -1, c.bytes, c.fingerprint,
                stream == null ? 0 : stream.id, state, c.calledNanos);
    }

    /** Fails at once if the communicator is closed, aborted or has failed members; else takes the op's number. */
    private void number(CollectiveCall c) {
        comm.checkOpen();
        RuntimeException broken = health.brokenFor(c.op.label(), "");
        if (broken != null) throw broken;
        c.seq = called.incrementAndGet();
    }

    /**
     * This rank refused its own arguments to {@code op} ({@code what}: which and why): the op takes its number as a
     * call would, and every other rank's op of that number fails with a {@link CollectiveMismatchException} that says
     * so, instead of waiting for this rank until the timeout. The notice goes on the notice channel (where a transport
     * collective listens), and in the zero-copy turn a fingerprint that matches nobody's ends the op there. Nothing is
     * told when the call could not run anyway (one rank, a closed or broken communicator: the others find out alike).
     */
    void refuse(CollectiveOp op, String what) {
        if (size == 1 || comm.isClosed() || health.brokenFor(op.label(), "") != null) return;
        long seq = called.incrementAndGet();
        String refusal = op.label() + " (collective #" + seq + ") fails on every rank: rank " + rank + " refused its own arguments: " + what;
        trace.ended(trace.open(OpTrace.Kind.COLLECTIVE, op.label(), seq, -1, -1, null, null, -1, -1, op.refusedFingerprint(), 0,
                OpTrace.State.STARTED), null, null, new IllegalArgumentException(refusal));
        byte[] text = refusal.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        MemorySegment notice = MemorySegment.ofArray(java.util.Arrays.copyOf(text, Math.min(text.length, TransportLinks.NOTICE_BYTES)));
        int tag = (int) (seq & 0x7fffffff);
        for (int p = 0; p < size; p++) {
            if (p != rank) transport.send(noticeChannel, group == null ? p : group[p], tag, notice); // small: sent eagerly
        }
        if (zc == null) return;
        try {
            zc.refuse(seq, op.refusedFingerprint(), op.label());
        } catch (RuntimeException e) {
            org.slf4j.LoggerFactory.getLogger(CollectiveFrame.class).debug("rank {}: {} #{}: the refusal did not reach shared memory: {}",
                    rank, op.label(), seq, e.toString());
        }
    }

    void giveUpTurn(CollectiveCall c) {
        trace.ended(c.ticket, null, null, new io.hcomm4j.CommAbortedException("rank " + rank + ": " + c.op.label() + " #" + c.seq
                + " did not run: its stream or the collective thread refused it"));
        if (zc != null) zc.skip(c.seq);
    }

    /**
     * The op's turn under the zero-copy engine (every collective of such a communicator takes it, in call order), the
     * shared-memory attempt, and the transport if some rank cannot; without an engine, the transport at once.
     */
    void execute(CollectiveCall c) {
        runRecorded(c, true);
    }

    /**
     * Runs {@code c} and ends its flight record; {@code queued}: it was recorded as scheduled and starts now (a call
     * run on its caller's thread was recorded as started: no second clock read).
     */
    private void runRecorded(CollectiveCall c, boolean queued) {
        if (queued) trace.started(c.ticket);
        Throwable failure = null;
        try {
            run(c);
        } catch (RuntimeException | Error e) {
            failure = e;
            throw e;
        } finally {
            trace.ended(c.ticket, c.algo, c.path, c.channels, failure, c.endNanos);
            if (failure instanceof io.hcomm4j.CommTimeoutException) session.traces().timedOut(failure);
        }
    }

    private void run(CollectiveCall c) {
        if (c.seq > startedUpTo) startedUpTo = c.seq;
        ZeroCopyEngine z = zc;
        if (z == null) {
            runTransport(c, false);
            return;
        }
        String name = c.op.label();
        z.enter(c.seq, name);
        try {
            if (session.config().fullCheck()) fullCheck(c, c.seq, name, c.fingerprint);
            long t0 = c.calledNanos != 0 ? c.calledNanos : System.nanoTime();
            CollectiveEvent ev = CollectiveEvent.wanted() ? new CollectiveEvent() : null;
            if (ev != null) ev.begin();
            z.opBytes(c.bytes);
            z.current = c;
            if (zeroCopy(z, c)) {
                c.endNanos = System.nanoTime(); // the flight record's end too
                metrics.record(c.op.ordinal(), c.bytes, c.endNanos - t0, false);
                c.algo = null;
                c.path = ZERO_COPY;
                commitEvent(ev, c, null, ZERO_COPY);
            } else {
                runTransport(c, true);
            }
        } catch (PeerFailedException e) {
            throw health.opFailure(c.seq, name, e, true);
        } finally {
            z.leave(c.seq);
        }
    }

    /** This rank's part in shared memory: true if the op ran there (every rank decides alike). */
    private boolean zeroCopy(ZeroCopyEngine z, CollectiveCall c) {
        boolean want = session.tuner().forced(c.op.tunerOp()) == null;
        String name = c.op.label();
        long seq = c.seq;
        int fp = c.fingerprint;
        try {
            return switch (c.op) {
                case ALL_REDUCE -> z.reductions.allReduce(seq, fp, name, c.send, c.recv, c.count, c.kernel, c.avg, want);
                case REDUCE -> z.reductions.reduce(seq, fp, name, c.send, c.recv, c.count, c.kernel, c.avg, c.root, want);
                case REDUCE_SCATTER, REDUCE_SCATTER_V ->
                        z.reductions.reduceScatter(seq, fp, name, c.send, c.recv, c.blockCount, c.counts, c.kernel, c.avg, want);
                case BROADCAST -> z.movement.broadcast(seq, fp, name, c.send, c.bytes, c.root, want);
                case ALL_GATHER, ALL_GATHER_V ->
                        z.movement.allGather(seq, fp, name, c.mine, c.mineOffset, c.recv, c.blockBytes, c.recvOff, c.recvLen, want);
                case GATHER -> z.movement.gather(seq, fp, name, c.send, c.recv, c.blockBytes, c.root, want);
                case GATHER_V -> z.movement.gatherV(seq, fp, name, c.send, c.recv, c.recvOff, c.recvLen, c.root, want);
                case SCATTER -> z.tables.scatter(seq, fp, name, c.send, c.recv, c.blockBytes, c.root, want);
                case SCATTER_V -> z.tables.scatterV(seq, fp, name, c.send, c.sendOff, c.sendLen, c.recv, c.root, want);
                case ALL_TO_ALL -> z.tables.allToAll(seq, fp, name, c.send, c.recv, c.blockBytes, want);
                case ALL_TO_ALL_V -> z.tables.allToAllV(seq, fp, name, c.send, c.sendOff, c.sendLen, c.sendBytes, c.recv, c.recvOff,
                        c.recvLen, c.recvBytes, want);
                case BARRIER -> z.barrier(seq, fp, name);
                case SCAN, EXSCAN -> false; // each rank's result differs: nothing to share in place (every rank decides alike)
            };
        } catch (ReduceFunctionException e) {
            // this rank's function threw in its part; the others learn it from its error word (ZeroCopyEngine.finish)
            throw new ReduceFunctionException("rank " + rank + ": " + name + " (collective #" + seq + ", shared memory): "
                    + e.getMessage(), e.getCause());
        }
    }

    /**
     * The transport algorithm of {@code c}, counted in the metrics and as a JFR event; {@code checked}: the zero-copy
     * frame ran HCOMM_CHECK=full's check already.
     */
    private void runTransport(CollectiveCall c, boolean checked) {
        CollectiveEvent event = CollectiveEvent.wanted() ? new CollectiveEvent() : null;
        if (event != null) event.begin();
        long t0 = c.calledNanos != 0 ? c.calledNanos : System.nanoTime();
        Throwable failure = null;
        c.algo = null;
        c.path = TRANSPORT;
        try {
            runLinks(c, checked);
        } catch (RuntimeException | Error e) {
            failure = e;
            throw e;
        } finally {
            c.endNanos = System.nanoTime(); // the flight record's end too
            metrics.record(c.op.ordinal(), c.bytes, c.endNanos - t0, failure != null);
            commitEvent(event, c, failure, "fixed");
        }
    }

    private void runLinks(CollectiveCall c, boolean checked) {
        try (TransportLinks links = new TransportLinks(transport, collectiveChannel, noticeChannel, c.seq, rank, size, group,
                c.op.label(), c.fingerprint, session.scratch(), c.bytes, c)) {
            links.high(c.high);
            try {
                health.register(links);
                if (session.config().fullCheck() && !checked) fullCheck(c, c.seq, c.op.label(), c.fingerprint);
                algorithms.run(c, links);
            } catch (CollectiveMismatchException e) {
                links.tellOthers(e);
                throw e;
            } catch (PeerFailedException e) {
                // a send or receive failed because a peer did (the transport saw it first): the op fails as a whole
                throw health.opFailure(links.seq(), links.op(), e, false);
            } catch (io.hcomm4j.transport.SenderGaveUpException e) {
                // a peer's op failed before this one: as it saw a member fail (that failure is this op's too, once it
                // shows here), or as it found a mismatch (its notice aborts these links soon after the sender withdrew),
                // each within the heartbeat timeout; else the peer's giving up is this op's failure
                PeerFailedException failed = health.failureWithin(session.config().heartbeatTimeout(), e,
                        () -> links.aborted() != null);
                RuntimeException told = links.aborted();
                if (told != null) throw told;
                if (failed != null) throw health.opFailure(links.seq(), links.op(), failed, true);
                throw e;
            } catch (ReduceFunctionException e) {
                throw links.functionFailed(e);
            } finally {
                c.channels = links.channels();
                health.unregister(links);
            }
        }
    }

    /**
     * HCOMM_CHECK=full: every rank's fingerprint of this op to every rank (Bruck all-gather on the check channel),
     * compared before any data moves, so all ranks reach the same verdict.
     */
    private void fullCheck(CollectiveCall c, long seq, String op, int fingerprint) {
        if (size == 1) return;
        int[] all = new int[size];
        all[rank] = fingerprint;
        try (TransportLinks check = new TransportLinks(transport, checkChannel, noticeChannel, seq, rank, size, group,
                op + " (check)", 0, session.scratch(), 4L * size)) {
            try {
                health.register(check);
                AllGather.bruck(check, MemorySegment.ofArray(all), 4);
            } finally {
                health.unregister(check);
            }
        }
        for (int r = 1; r < size; r++) {
            if (all[r] != all[0]) {
                throw new CollectiveMismatchException("rank " + rank + ": " + op + " (collective #" + seq + ", full check): "
                        + (c == null ? CollectiveOp.describeMismatch(all) : c.verdict(all, rank)));
            }
        }
    }

    /**
     * Ends {@code event} (null: no recording wants it) and commits it with the op's fields; {@code failure} null: ok;
     * {@code path} the algorithm column when the tuner chose none.
     */
    private void commitEvent(CollectiveEvent event, CollectiveCall c, Throwable failure, String path) {
        if (event == null) return;
        event.end();
        if (event.shouldCommit()) {
            event.op = c.op.label();
            event.communicator = commId;
            event.rank = rank;
            event.ranks = size;
            event.sequence = c.seq;
            event.bytes = Math.max(0, c.bytes);
            event.outcome = failure == null ? "ok" : failure.getClass().getSimpleName();
            event.channels = c.channels;
            event.algorithm = c.algo == null ? path : io.hcomm4j.algo.Tuner.name(c.algo);
            event.commit();
        }
    }

    private synchronized ExecutorService collectiveThread() {
        if (collectiveThread == null) {
            collectiveThread = Executors.newSingleThreadExecutor(r -> Thread.ofPlatform().daemon()
                    .name("hcomm-coll-" + rank + "-" + commId).unstarted(r));
        }
        return collectiveThread;
    }

    synchronized void shutdown() {
        if (collectiveThread != null) {
            collectiveThread.shutdown();
            try {
                collectiveThread.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            collectiveThread.shutdownNow();
        }
    }

}
