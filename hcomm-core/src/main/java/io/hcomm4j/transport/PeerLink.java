package io.hcomm4j.transport;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.SelectionKey;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The one connection between this rank and one peer, in both directions, over its {@link Conduit} (a TCP socket, or
 * shared-memory rings for a peer on this host): frames out (any thread,
 * under {@code txLock}, written straight to the socket when nothing is queued) and frames in (only the
 * thread holding the progress token reads).
 *
 * <p><b>Reliable links</b> (HCOMM_RETRY_MAX &gt; 0 on both sides) survive the loss of their connection. Every frame
 * sent is kept in a {@link ResendLog} until the peer acknowledges it (the {@code ack} of any frame it sends: the last
 * frame it received completely); a DATA send completes only then, an EAGER payload is copied into the log. When the
 * connection breaks without a BYE (end of stream, reset, a write error) or stays silent for the heartbeat timeout, the
 * link goes {@link State#RECONNECTING}: ops keep waiting and new frames go only to the log; the receive side forgets a
 * frame it had read only in part (a payload being read is read again from its start, into the same place, when that
 * frame comes again); a new connection is made (by either side: {@link Reconnector}), each side tells the other the
 * last frame it received completely, and sends again everything after the other's. So each frame is delivered once and
 * in order. Locks, always in this order: the progress token, this link's monitor, {@code txLock}.
 *
 * <p>The link keeps the connection's life (install, loss, re-establishment, failure, close) and the requests waiting
 * on the peer; its {@link FrameWriter} writes frames and its {@link FrameReader} reads them.
 */
final class PeerLink {
    enum State { IDLE, CONNECTING, CONNECTED, RECONNECTING, CLOSED, FAILED }

    /** Largest chunk handed to one conduit call for a native segment (ByteBuffers stop at 2 GiB). */
    static final long NATIVE_CHUNK = 256L << 20;
    /** {@link #markFailed}: the link was failed or closed already. */
    static final int ALREADY_FAILED = -1;
    /** {@link #markFailed}: the link had no connection (it was being opened, or idle). */
    static final int WAS_NOT_CONNECTED = 0;
    /** {@link #markFailed}: the link had a connection (without a BYE, evidence that the peer failed). */
    static final int WAS_CONNECTED = 1;

    private static final org.slf4j.Logger LOG = PeerTransport.LOG;

    private final LinkHost host;
    final int peer;
    /** This side's rank. */
    final int rank;

    /** A resend log of the transport's bounds (a reliable connection is being installed). */
    ResendLog newResendLog() {
        return host.newResendLog();
    }
    private final Progress progress;
    /** Guards the write side ({@link FrameWriter}); taken after this link's monitor, never before. */
    final ReentrantLock txLock = new ReentrantLock();
    final FrameWriter writer;
    final FrameReader reader;

    // connection (guarded by this)
    volatile State state = State.IDLE;
    /** The byte pipe: a TCP socket, or shared-memory rings for a peer on this host (while RECONNECTING: the lost one). */
    volatile Conduit ch;
    volatile boolean peerSaidBye;
    /** Both sides keep a resend log and reconnect (HCOMM_RETRY_MAX &gt; 0 on both, from the hello); set at the first connect. */
    volatile boolean reliable;
    /** Number of the connection: 1 for the first, one more for each re-established one (both sides agree). */
    long epoch;
    /** A reconnect attempt of this side is under way: one from a higher rank that arrives meanwhile is refused. */
    boolean attempting;
    /** A thread re-establishes the connection (at most one per link). */
    boolean recovering;
    /** While RECONNECTING: why and when ({@code System.nanoTime()}) the connection was lost. */
    Exception lossCause;
    long lostAt;
    /**
     * For a connection lost to silence: when the peer is declared failed if no new connection is installed by then (its
     * silence reached HCOMM_HEARTBEAT_TIMEOUT). Set before {@link #lost}; read by the reconnect thread.
     */
    volatile long giveUpAt;
    /** The socket of a reconnect attempt under way, closed by an orderly close. */
    volatile java.nio.channels.SocketChannel attemptChannel;
    /** Connections re-established on this link (under the monitor), and what the last one sent again. */
    long reconnects;
    long lastResent;
    long lastResentBytes;

    /** Rendezvous sends whose RTS went out, by msgId, until their CTS comes. */
    final ConcurrentHashMap<Long, SendRequest> awaitingCts = new ConcurrentHashMap<>();
    /** Matched rendezvous receives whose CTS went out, by msgId, until their DATA comes. */
    final ConcurrentHashMap<Long, RecvRequest> awaitingData = new ConcurrentHashMap<>();
    /** Sends whose data the peer reads from our mapping (DATA_REF, shared memory), by msgId, until its DATA_DONE. */
    final ConcurrentHashMap<Long, SendRequest> awaitingDone = new ConcurrentHashMap<>();

    /**
     * 0 for the peer's primary link (every frame of the protocol); n &gt; 0 for its n-th extra link, a rail (another
     * interface or connection to the same peer: only the chunks of large messages, see {@link DataPump}).
     */
    final int rail;
    /** The peer's primary link (this one, or the one a rail belongs to): its maps hold the messages in flight. */
    final PeerLink owner;
    /** The chunks of the peer's large messages, shared by all its links. */
    final DataPump pump;
    /** The chunks this link wrote that wait for their acknowledgement, and its measured rate. */
    final DataPump.Lane lane;
    /** The padding of every ECHO request (zeros, never written). */
    private static final java.lang.foreign.MemorySegment ECHO_PAD = java.lang.foreign.Arena.global().allocate(Frame.ECHO_BYTES);
    /** Shortest ECHO round trip measured on this link so far, in nanoseconds (0: none yet). */
    private volatile long echoNanos;
    /** ECHO replies received on this link. */
    private volatile int echoes;

    PeerLink(LinkHost host, int peer) {
        this(host, peer, 0, null);
    }

    /** A rail of {@code owner} (rail &gt; 0), or a primary link ({@code owner} null). */
    PeerLink(LinkHost host, int peer, int rail, PeerLink owner) {
        this.rail = rail;
        this.lane = new DataPump.Lane(rail);
        this.owner = owner == null ? this : owner;
        this.pump = owner == null ? new DataPump(this) : owner.pump;
        this.host = host;
        this.peer = peer;
        this.rank = host.rank();
        this.progress = host.progress();
        this.writer = new FrameWriter(this, rank, progress, txLock);
        this.reader = new FrameReader(this, writer, host);
    }

    // ------------------------------------------------------------------------------------ frames (forwarded)

    /**
     * Writes (or queues) one frame. {@code completes}, if given, succeeds once the whole frame is on the socket (on a
     * reliable link: a DATA once the peer acknowledged it; an EAGER frame is written from its copy in the resend log).
     * While the link is RECONNECTING the frame only goes to the resend log, and out once the connection is back.
     *
     * @return false if the link is not usable (failed or closed)
     */
    boolean sendFrame(byte type, int flags, long commId, int tag, long length, long msgId, MemorySegment payload,
                      SendRequest completes) {
        return writer.sendFrame(type, flags, commId, tag, length, msgId, payload, completes);
    }

    /**
     * Takes the eager credit for {@code payload} and sends it as an EAGER frame completing {@code completes}, under one
     * hold of the tx lock (the blocking send's path: one lock round instead of two).
     *
     * @return {@link FrameWriter#SENT}, {@link FrameWriter#NO_CREDIT} or {@link FrameWriter#UNUSABLE}
     */
    int sendEager(int flags, long commId, int tag, MemorySegment payload, SendRequest completes) {
        return writer.sendEager(flags, commId, tag, payload, completes);
    }

    long nextMsgId() {
        return writer.nextMsgId();
    }

    /** Next {@code length} bytes go to {@code target} (null: discard); then the recv or unexpected entry completes. */
    void expectPayload(MemorySegment target, long length, RecvRequest recv, byte[] unexpected, long commId, int tag, int flags) {
        reader.expectPayload(target, length, recv, unexpected, commId, tag, flags);
    }

    /** An eager message of {@code cost} left the receive side (to a receive, or dropped): credit it back in batches. */
    void consumed(long cost) {
        reader.consumed(cost);
    }

    /** Seq of the last frame received completely (any thread). */
    long rxDone() {
        return reader.rxDone();
    }

    /** Bytes read from the peer so far (any thread; no ordering with anything else). */
    long rxProgress() {
        return reader.rxProgress();
    }

    /**
     * Watchdog: sends a HEARTBEAT if no frame went out since the previous call. A link busy writing (its lock held, or
     * frames queued) is skipped: its bytes reach the peer anyway, or the peer does not read them and no heartbeat would
     * get through either.
     */
    void heartbeatIfIdle() {
        writer.heartbeatIfIdle();
    }

    /** Sends a latency probe ({@link Frame#ECHO}) on this link; its reply updates {@link #echoNanos()}. */
    boolean sendEcho() {
        return writer.sendFrame(Frame.ECHO, 0, 0, 0, Frame.ECHO_BYTES, System.nanoTime(), ECHO_PAD, null);
    }

    /** The reply to the probe sent at {@code sentAt} (this process's clock) came (the reader, on the poller). */
    void echoed(long sentAt) {
        long rtt = System.nanoTime() - sentAt;
        if (rtt > 0 && (echoNanos == 0 || rtt < echoNanos)) echoNanos = rtt;
        echoes++; // one writer: the poller
    }

    /** Shortest probe round trip on this link so far, nanoseconds; 0 if none came back yet. */
    long echoNanos() {
        return echoNanos;
    }

    /** Probe replies received on this link so far. */
    int echoes() {
        return echoes;
    }

    /** Adds the requests of queued frames (and of sends waiting for an acknowledgement) to {@code out} that {@code keep} selects. */
    void queuedRequests(java.util.function.Predicate<SendRequest> keep, java.util.List<? super SendRequest> out) {
        writer.queuedRequests(keep, out);
    }

    /** Nothing queued, and on a reliable link every frame acknowledged by the peer (close waits for it). */
    boolean delivered() {
        return writer.delivered();
    }

    void onReady(SelectionKey k) {
        int ready;
        try {
            ready = k.readyOps();
        } catch (java.nio.channels.CancelledKeyException e) {
            return; // the conduit was closed by another thread (lost, replaced) after the selector chose the key
        }
        onReady((ready & SelectionKey.OP_WRITE) != 0, (ready & SelectionKey.OP_READ) != 0);
    }

    /** The conduit may take more bytes ({@code writable}) or has bytes to read ({@code readable}). */
    void onReady(boolean writable, boolean readable) {
        try {
            if (writable) writer.flushQueue();
            if (readable) reader.read();
        } catch (ProtocolException e) {
            LOG.warn("rank {}: protocol error from rank {}: {}; closing the connection", rank, peer, e.getMessage());
            // the peer reads this before the end of the stream (if it reads at all): it knows it was cut off, and why
            if (state == State.CONNECTED) sendFrame(Frame.FAILED, Failures.kindOf(e), 0, peer, 0, 0, null, null);
            fail(e);
        } catch (IOException e) {
            lost(e);
        } catch (RuntimeException e) {
            // e.g. a receive buffer whose arena was closed while its op was in flight: the byte stream can
            // no longer be followed, so the connection goes
            LOG.warn("rank {}: failure while receiving from rank {}: {}; closing the connection", rank, peer, e.toString());
            fail(new IOException(e));
        }
    }

    /** Test hook: breaks the connection now, as {@code how} says, without a BYE; false if it is not connected. */
    boolean drop(Conduit.Drop how) {
        boolean[] dropped = new boolean[1];
        progress.withToken(() -> {
            Conduit c = ch;
            if (state != State.CONNECTED || c == null) return;
            try {
                c.abort(how);
            } catch (IOException ignored) {
                // broken either way
            }
            lost(new IOException("connection dropped by a test hook (" + how + ")"));
            dropped[0] = true;
        });
        return dropped[0];
    }

    /**
     * Re-establishes this (reliable, connected) link on purpose, to move it to another interface: the connection closes
     * and the reconnect, with its resend log, goes where {@link Rails#reconnectRoute} says; false if it was not connected
     * or may not be re-established.
     */
    boolean move(String why) {
        boolean[] moved = new boolean[1];
        progress.withToken(() -> {
            Conduit c = ch;
            Moving cause = new Moving(why);
            if (state != State.CONNECTED || c == null || rail != 0 || !mayReconnect(cause)) return;
            try {
                c.abort(Conduit.Drop.CLOSE);
            } catch (IOException ignored) {
                // closed either way
            }
            lost(cause);
            moved[0] = true;
        });
        return moved[0];
    }

    // ---------------------------------------------------------------------------------------- lifecycle

    /**
     * Installs a connected, authenticated channel (called with this link's monitor held).
     *
     * @param peerUnexpectedLimit the peer's per-peer eager buffer, from the hello: our initial send credit
     */
    void install(Conduit channel, long peerUnexpectedLimit, boolean reliable) throws IOException {
        this.reliable = reliable;
        reader.allocate();
        writer.reset(peerUnexpectedLimit, reliable);
        epoch = 1;
        this.ch = channel;
        channel.start();
        state = State.CONNECTED;
        progress.wakeup();
        progress.selector.wakeup();
        notifyAll();
        ConnectionEvent.commit(rank, peer, channel.kind(), false, 1, 1, 0);
        // a connection that completes while the session closes was missed by close's BYE round: its end is orderly too
        if (host.closing()) sendFrame(Frame.BYE, 0, 0, 0, 0, 0, null, null);
    }

    /**
     * The connection broke (end of stream or reset without a BYE, a failed write, or silence for the heartbeat timeout):
     * on a reliable link it is re-established (state RECONNECTING, ops keep waiting), otherwise the peer failed.
     */
    void lost(Exception cause) {
        if (rail != 0) {
            host.railLost(this, cause);
            return;
        }
        if (!mayReconnect(cause)) {
            if (cause instanceof ProtocolException && state == State.CONNECTED && !host.closing()) {
                LOG.warn("rank {}: protocol error from rank {}: {}; closing the connection", rank, peer, cause.getMessage());
            }
            fail(cause);
            return;
        }
        Conduit old;
        synchronized (this) {
            if (state != State.CONNECTED) return; // being re-established already, failed or closed
            state = State.RECONNECTING;
            lossCause = cause;
            lostAt = System.nanoTime();
            old = ch;
            echoNanos = 0; // the next connection may take another route
            notifyAll();
        }
        host.retire(old);
        if (cause instanceof Moving) {
            LOG.info("rank {}: {}", rank, cause.getMessage());
        } else {
            LOG.warn("rank {}: lost the connection to rank {}: {}; re-establishing it (HCOMM_RETRY_MAX {})", rank, peer,
                    cause.toString(), host.retryMax());
        }
        host.reconnect(this);
    }

    /** Whether a lost connection may be re-established rather than its peer declared failed. */
    boolean mayReconnect(Exception cause) {
        return reliable && !host.linksClosing() && !peerSaidBye && !(cause instanceof ProtocolException)
                && !(cause instanceof ReportedFailure rf && rf.kind != Frame.FAIL_SILENT) && !host.isDeclaredFailed()
                && !host.isDead(peer);
    }

    /**
     * The peer re-established the connection while ours still looked alive (its side broke, or went silent): ours is
     * dropped (monitor held, by the thread that installs the new one).
     */
    void detach(Exception cause) {
        state = State.RECONNECTING;
        lossCause = cause;
        lostAt = System.nanoTime();
        Conduit old = ch;
        host.retire(old);
    }

    /**
     * Rolls the receive side back to the last frame received completely, before this side tells the peer where to
     * resume (progress token held; the connection is gone, so nothing more is read from it). A payload read in part
     * is kept where it goes: that frame comes again first ({@link FrameReader#detach}).
     */
    void detachRx() {
        reader.detach();
    }

    /**
     * Installs a re-established connection (progress token and monitor held, {@link #detachRx} done): the peer has every
     * frame up to {@code peerResume}; the ones after it are queued to go out again, before anything new.
     *
     * @return sends to complete (outside the locks): those acknowledged by the resume point, and eager ones whose partial
     *         write was dropped (their payload is in the log)
     */
    java.util.List<SendRequest> installResumed(Conduit channel, long newEpoch, long peerResume) throws IOException {
        java.util.List<SendRequest> done = new java.util.ArrayList<>();
        detachRx(); // done already, unless the link was connected and lost again since
        txLock.lock();
        try {
            writer.requeueAfter(peerResume, rxDone(), channel instanceof ShmConduit, done);
            ch = channel;
            host.releaseRetired(this); // the old rings: nobody can touch them now (token and tx lock held)
            reader.reattached();
            epoch = newEpoch;
            state = State.CONNECTED;
            channel.start();
            if (writer.queued()) channel.wantWrite();
        } finally {
            txLock.unlock();
        }
        reader.peerResumedAfter(peerResume);
        reconnects++;
        pump.kick();
        host.countResumed(lastResent, lastResentBytes);
        notifyAll();
        progress.wakeup();
        progress.selector.wakeup();
        return done;
    }

    /**
     * Whether a peer that has every frame up to {@code peerResume} can be resumed from here: the resend log still holds
     * every frame after it. A point below the log means the peer acknowledged more since it said it (a late hello).
     */
    boolean canResumeFrom(long peerResume) {
        return writer.canResumeFrom(peerResume);
    }

    /**
     * The connection broke for good: the transport records the peer's failure and tells the layer above, then this link
     * closes ({@link #markFailed}) and everything that depended on the peer fails.
     */
    void fail(Exception cause) {
        if (rail != 0) {
            host.railLost(this, cause);
            return;
        }
        host.linkFailed(this, cause);
    }

    /**
     * Takes the link to FAILED, closes its connection and logs the loss; says whether it had a connection.
     */
    int markFailed(Exception cause) {
        int was;
        synchronized (this) {
            if (state == State.FAILED || state == State.CLOSED) return ALREADY_FAILED;
            was = state == State.CONNECTED || state == State.RECONNECTING ? WAS_CONNECTED : WAS_NOT_CONNECTED;
            state = State.FAILED;
            notifyAll();
        }
        closeAttempt();
        closeChannel();
        if (peerSaidBye) {
            LOG.debug("rank {}: rank {} closed its session", rank, peer);
        } else if (!host.closing() && !(cause instanceof ReportedFailure) && !(cause instanceof ProtocolException)) { // those were logged
            LOG.warn("rank {}: lost the connection to rank {}: {}", rank, peer, cause.toString());
        }
        return was;
    }

    /**
     * Adds every request waiting on this link to {@code out} and forgets them (the link failed or closed): queued frames,
     * sends waiting for an acknowledgement, CTS, DATA or DATA_DONE, and the receive whose payload was being read.
     */
    void drainRequests(java.util.List<Request<?>> out) {
        out.addAll(drainQueued());
        RecvRequest partial = reader.payloadRecv();
        if (partial != null) out.add(partial);
        out.addAll(awaitingCts.values());
        awaitingCts.clear();
        out.addAll(awaitingData.values());
        awaitingData.clear();
        out.addAll(awaitingDone.values());
        awaitingDone.clear();
    }

    /** Drains queued frames that will never be written, and sends waiting for an acknowledgement (the state left CONNECTED for good). */
    java.util.List<SendRequest> drainQueued() {
        return writer.drainQueued();
    }

    /** Closes the socket of a reconnect attempt under way, if any. */
    void closeAttempt() {
        java.nio.channels.SocketChannel a = attemptChannel;
        if (a != null) {
            try {
                a.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    void closeChannel() {
        host.retire(ch);
    }

    /** Orderly close: BYE, then the socket (the caller drained the queue first). */
    void closeOrderly() {
        synchronized (this) {
            if (state != State.CONNECTED) {
                if (state == State.IDLE || state == State.CONNECTING || state == State.RECONNECTING) state = State.CLOSED;
                notifyAll();
                closeAttempt();
                return;
            }
        }
        sendFrame(Frame.BYE, 0, 0, 0, 0, 0, null, null);
    }

    void markClosed() {
        synchronized (this) {
            if (state == State.CONNECTED || state == State.IDLE || state == State.CONNECTING || state == State.RECONNECTING) {
                state = State.CLOSED;
            }
            notifyAll();
        }
        closeAttempt();
        closeChannel();
    }

    /** Why a link was failed from outside its own I/O: the peer was silent, or another rank reported it failed. */
    static final class ReportedFailure extends IOException {
        private static final long serialVersionUID = 1L;
        /** {@link Frame#FAIL_SILENT} or {@link Frame#FAIL_REPORTED}. */
        final int kind;

        ReportedFailure(String message, int kind) {
            super(message);
            this.kind = kind;
        }
    }

    /** Why a primary link is re-established on purpose: it moves to another interface ({@link #move}). */
    static final class Moving extends IOException {
        private static final long serialVersionUID = 1L;

        Moving(String message) {
            super(message);
        }
    }

    /** A header or frame sequence that no well-behaved peer sends (or, {@link CorruptMappingException}, writes). */
    static class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }
}
