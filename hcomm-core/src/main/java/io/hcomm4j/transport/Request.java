package io.hcomm4j.transport;

import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

/**
 * One point-to-point op in flight: its arguments, its protocol state and its future. Completion sets a
 * volatile flag first (what waiters poll) and wakes a parked waiter, then completes the future.
 */
public abstract sealed class Request<T> extends CommFuture<T> implements Progress.Awaited
        permits SendRequest, RecvRequest, ProbeRequest {
    final PeerTransport transport;
    final long commId;
    final int tag;
    final MemorySegment buf;
    /** Rendezvous message id once assigned (send) or matched (recv); 0 before. */
    long msgId;
    private volatile boolean finished;
    private static final java.lang.invoke.VarHandle FINISHED;
    private static final java.lang.invoke.VarHandle TRACE;

    static {
        try {
            FINISHED = java.lang.invoke.MethodHandles.lookup().findVarHandle(Request.class, "finished", boolean.class);
            TRACE = java.lang.invoke.MethodHandles.lookup().findVarHandle(Request.class, "trace", io.hcomm4j.monitor.OpTrace.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
    volatile Thread waiter;
    /** When the watchdog first saw this op pending (0: not yet), and whether it reported it stuck (watchdog only). */
    long seenAt;
    boolean reported;

    Request(PeerTransport transport, long commId, int tag, MemorySegment buf) {
        this.transport = transport;
        this.commId = commId;
        this.tag = tag;
        this.buf = buf;
    }

    @Override
    public final void waiter(Thread t) {
        waiter = t;
    }

    /**
     * Runs on the failing thread after the op is marked finished and before its caller learns of the failure: what
     * still writes into its buffer must stop here (a receive through UCX, {@link RecvRequest#stopWritesOnFailure}).
     */
    void beforeFailure() {
    }

    /** True once the op completed, successfully or not. */
    @Override
    public final boolean finished() {
        return finished;
    }

    final void succeed(T value) {
        if (markFinished()) {
            complete(value);
            traceEnded();
        }
    }

    final void fail(Throwable error) {
        failure = error;
        if (markFinished()) {
            beforeFailure();
            completeExceptionally(inCommRanks(error));
            traceEnded();
            // failed from outside the poller (an abort, the watchdog): a waiter blocked in select must look now
            transport.progress.wakeup();
        }
    }

    /**
     * The links to the peer that carried this op's data, a bit per link ({@link PeerLink#rail}): the chunks of a large
     * message spread over the rails; everything else goes on the primary link. Written where the chunks are handed to
     * a link (sender, under the pump's monitor) or taken from one (receiver), read once the op has ended.
     */
    int linksUsed;

    /**
     * How many links (TCP connections: interfaces x HCOMM_CHANNELS) this op's data went over: 1 for an eager or
     * shared-memory message, up to the links to the peer for a striped one (read after it ended).
     */
    public final int channels() {
        return Math.max(1, Integer.bitCount(linksUsed));
    }

    /** The flight record this op ends in (null: none, or it ended there already) and its ticket there. */
    private volatile io.hcomm4j.monitor.OpTrace trace;
    private long ticket;
    /** What it failed with (set before it is marked finished). */
    private volatile Throwable failure;

    /** Its record was given before the op was posted ({@link #recordFromStart}): only its end ends it, no handshake. */
    private boolean preRecorded;

    /**
     * Records the op, just posted, in {@code t} as a point-to-point {@code op} with {@code peer} (-1: any), {@code tag}
     * (-1: any) and {@code bytes}: one write of the whole record if it ended during its post (an eager send), else
     * opened now and ended by {@link #recordIn}'s handshake.
     */
    public final void recordPosted(io.hcomm4j.monitor.OpTrace t, String op, int peer, int tag, long bytes) {
        if (rmaFrame() || !P2pEvent.wanted()) {
            if (!t.enabled()) return;
            if (finished) {
                t.openEnded(io.hcomm4j.monitor.OpTrace.Kind.P2P, op, peer, tag, bytes, pathTo(tracePeer()), channels(), failure);
                return;
            }
        }
        recordIn(t, t.open(io.hcomm4j.monitor.OpTrace.Kind.P2P, op, -1, peer, tag, null, null, -1, bytes, 0, 0,
                io.hcomm4j.monitor.OpTrace.State.STARTED));
    }

    /**
     * Gives the op, not posted yet, its flight record ({@code ticket} in {@code t}), which its end ends: the post
     * publishes the fields to whichever thread ends it, so no handshake is needed.
     */
    final void recordFromStart(io.hcomm4j.monitor.OpTrace t, long ticket) {
        beginEvent();
        if (ticket < 0 && event == null) return;
        this.ticket = ticket;
        TRACE.set(this, t);
        preRecorded = true;
    }

    /**
     * Ends the op's flight record in {@code t} (ticket {@code ticket}) when the op ends, or now if it has: whichever of
     * this call and the op's end comes second ends it, exactly once (both sides write, then read the other's volatile).
     */
    public final void recordIn(io.hcomm4j.monitor.OpTrace t, long ticket) {
        beginEvent();
        if (ticket < 0 && event == null) return;
        this.ticket = ticket;
        if (event == null && finished) {
            // ended during its post (an eager send, a message that was there): its end saw no record, so end it here,
            // without the handshake below
            endRecord(t, true);
            return;
        }
        TRACE.setVolatile(this, t);
        if (finished) traceEnded(true);
    }

    private void traceEnded() {
        traceEnded(false);
    }

    /** {@code atRecord}: the op ended before {@link #recordIn}, which opened its record just now: no second clock read. */
    private void traceEnded(boolean atRecord) {
        if (preRecorded) { // ended once (markFinished), and recordIn is never called
            io.hcomm4j.monitor.OpTrace t = (io.hcomm4j.monitor.OpTrace) TRACE.get(this);
            if (t != null) endRecord(t, false);
            return;
        }
        io.hcomm4j.monitor.OpTrace t = (io.hcomm4j.monitor.OpTrace) TRACE.getAndSet(this, (io.hcomm4j.monitor.OpTrace) null);
        if (t != null) endRecord(t, atRecord);
    }

    private void endRecord(io.hcomm4j.monitor.OpTrace t, boolean atRecord) {
        int peer = tracePeer();
        String path = pathTo(peer);
        Throwable f = failure;
        long end = atRecord ? 0 : transport.progress.passClock();
        if (this instanceof RecvRequest r && f == null) {
            t.p2pEnded(ticket, path, channels(), null, r.sourceMap == null ? r.matchedSrc : r.sourceMap[r.matchedSrc], r.matchedSize, end);
        } else {
            t.p2pEnded(ticket, path, channels(), f, -1, 0, end);
        }
        P2pEvent e = event;
        if (e != null) {
            event = null;
            e.end();
            if (e.shouldCommit()) {
                e.op = this instanceof SendRequest ? "send" : "recv";
                e.communicator = commId;
                e.rank = transport.rank;
                e.peer = peer;
                e.tag = tag;
                e.bytes = this instanceof RecvRequest r && failure == null ? r.matchedSize : buf.byteSize();
                e.transport = path;
                e.channels = channels();
                e.outcome = failure == null ? "ok" : failure.getClass().getSimpleName();
                e.commit();
            }
        }
    }

    /** The flight record's path of an op with world rank {@code peer}: the link's kind (shm, tcp, tls), null if unknown. */
    private String pathTo(int peer) {
        return peer < 0 ? null : transport.transportTo(peer);
    }

    /** Starts the op's JFR event while a recording wants point-to-point events. */
    private void beginEvent() {
        if (!rmaFrame() && P2pEvent.wanted()) {
            P2pEvent e = new P2pEvent();
            e.begin();
            event = e;
        }
    }

    /** The JFR event of a recorded op while a recording wants them, else null. */
    private P2pEvent event;

    /** A one-sided op's frame (its record is the window op's; no point-to-point event). */
    boolean rmaFrame() {
        return false;
    }

    /** The world rank whose link the op used, for the flight record's path: -1 if unknown. */
    int tracePeer() {
        return -1;
    }

    private boolean markFinished() {
        if (finished || !FINISHED.compareAndSet(this, false, true)) return false; // one CAS, not a monitor round
        Thread w = waiter;
        if (w != null) LockSupport.unpark(w);
        transport.onFinished(this);
        return true;
    }

    /** World rank → rank of the op's communicator (-1: not a member), or null when they are the same. */
    int[] rankMap() {
        return null;
    }

    /** A PeerFailedException's world ranks, as ranks of this op's communicator (ranks outside it are left out). */
    private Throwable inCommRanks(Throwable e) {
        int[] map = rankMap();
        if (map == null || !(e instanceof io.hcomm4j.PeerFailedException pf)) return e;
        java.util.List<Integer> ranks = new java.util.ArrayList<>();
        for (int w : pf.failedRanks()) if (w >= 0 && w < map.length && map[w] >= 0) ranks.add(map[w]);
        return new io.hcomm4j.PeerFailedException(pf.getMessage(), ranks, pf.getCause());
    }

    /** "send to rank 3 (tag 7, 4096 bytes)" — names the op and the peer for errors. */
    abstract String describe();

    /** Called when a waiter gave up on this op: withdraw it if it has not started moving data. */
    abstract void abandon();

    @Override
    protected boolean awaitUntil(long deadlineNanos) {
        return transport.progress.awaitUntil(this, deadlineNanos);
    }

    @Override
    protected long defaultDeadline() {
        return System.nanoTime() + transport.timeoutNanos;
    }

    @Override
    protected CommTimeoutException timeoutException(long waitedNanos, String limit) {
        String why = transport.explainWait(waitedNanos); // while this op is still pending, so it is in the explanation
        transport.noteTimedOut(this, waitedNanos);
        abandon();
        return new CommTimeoutException("rank " + transport.rank + ": " + describe() + " did not complete within "
                + io.hcomm4j.Units.duration(waitedNanos) + " (" + limit + ")" + why);
    }
}
