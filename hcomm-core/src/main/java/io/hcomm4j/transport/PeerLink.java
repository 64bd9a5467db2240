package io.hcomm4j.transport;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The one connection between this rank and one peer, in both directions, over its {@link Conduit} (a TCP socket, or
 * shared-memory rings for a peer on this host): frames out (any thread,
 * under {@code txLock}, written straight to the socket when nothing is queued) and frames in (only the
 * thread holding the progress token reads). Small frames are read through a 64 KiB buffer, so one read
 * brings a header and its payload; a large payload is read straight into its destination.
 */
final class PeerLink {
    enum State { IDLE, CONNECTING, CONNECTED, CLOSED, FAILED }

    private static final int RX_CAPACITY = 128 * 1024;
    /** Heap payloads are copied through this much direct memory per connection (the socket needs direct memory). */
    private static final int STAGE_CAPACITY = 128 * 1024;
    /** Largest chunk handed to one socket call for a native segment (ByteBuffers stop at 2 GiB). */
    private static final long NATIVE_CHUNK = 256L << 20;
    private static final int ACK_EVERY = 128;
    private static final java.lang.invoke.VarHandle RX_BYTES;

    static {
        try {
            RX_BYTES = java.lang.invoke.MethodHandles.lookup().findVarHandle(PeerLink.class, "rxBytes", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final TcpTransport t;
    final int peer;

    // connection (guarded by this)
    volatile State state = State.IDLE;
    /** The byte pipe: a TCP socket, or shared-memory rings for a peer on this host. */
    Conduit ch;
    volatile boolean peerSaidBye;

    // outbound (guarded by txLock)
    final ReentrantLock txLock = new ReentrantLock();
    private final ArrayDeque<OutFrame> txQueue = new ArrayDeque<>();
    /** Control frames held back while one batch of received frames is handled, then written together. */
    private static final int MAX_HELD = 64;
    /** Headers of frames held back (under txLock); never non-empty while txQueue is not empty. */
    private final ByteBuffer held = ByteBuffer.allocateDirect(MAX_HELD * Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
    /** Whether a thread is handling a batch of received frames and will write {@link #held} at its end (under txLock). */
    private boolean holding;
    /** The held headers followed by the next frame's header: one write for all of them. */
    private final ByteBuffer txHeader = ByteBuffer.allocateDirect((MAX_HELD + 1) * Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
    private final ByteBuffer[] gather = new ByteBuffer[2];
    private final ByteBuffer stage = ByteBuffer.allocateDirect(STAGE_CAPACITY);
    private final MemorySegment stageSeg = MemorySegment.ofBuffer(stage);
    private long txSeq;
    private long msgIds;
    /** {@link #txSeq} when the watchdog last looked: unchanged means nothing went out since (under txLock). */
    private long txSeqAtBeat;

    // inbound (progress token holder only)
    private final ByteBuffer rx = ByteBuffer.allocateDirect(RX_CAPACITY).order(ByteOrder.LITTLE_ENDIAN);
    private final MemorySegment rxSeg = MemorySegment.ofBuffer(rx);
    /** Bytes read from the peer so far: the watchdog's sign of life (written by the poller, read opaquely). */
    private long rxBytes;
    private volatile long rxSeq;
    private long rxSinceAck;
    volatile long peerAcked;
    private boolean inPayload;
    private MemorySegment dest;
    private long destOff;
    private long remaining;
    private RecvRequest payloadRecv;
    private byte[] payloadUnexpected;
    private long payloadCommId;
    private int payloadTag;
    private int payloadFlags;

    /** Rendezvous sends whose RTS went out, by msgId, until their CTS comes. */
    final ConcurrentHashMap<Long, SendRequest> awaitingCts = new ConcurrentHashMap<>();
    /** Matched rendezvous receives whose CTS went out, by msgId, until their DATA comes. */
    final ConcurrentHashMap<Long, RecvRequest> awaitingData = new ConcurrentHashMap<>();
    /**
     * Eager flow control. A sender may have at most the receiver's unexpected limit of eager bytes (plus
     * {@link Frame#EAGER_OVERHEAD} each) that the receiver has not yet handed to a receive; past that it sends
     * rendezvous (only an RTS travels), so a receiver never buffers more than its limit per peer and a sender
     * far ahead never deadlocks a legal program.
     */
    private long sendCredit;
    /** The peer's limit (from the hello); credit returned beyond it is a protocol error. */
    private long peerLimit;
    /** Eager bytes (with overhead) received and not yet credited back (poller adds, consumers subtract). */
    private final java.util.concurrent.atomic.AtomicLong eagerHeld = new java.util.concurrent.atomic.AtomicLong();
    /** Eager bytes handed to receives (or dropped) and not yet credited back. */
    private final java.util.concurrent.atomic.AtomicLong consumedUnreturned = new java.util.concurrent.atomic.AtomicLong();

    PeerLink(TcpTransport t, int peer) {
        this.t = t;
        this.peer = peer;
        stage.limit(0);
    }

    /** A frame (or its unwritten rest) waiting for the socket. */
    private static final class OutFrame {
        final ByteBuffer header;
        final MemorySegment payload;
        long offset;
        final SendRequest completes;

        OutFrame(ByteBuffer header, MemorySegment payload, long offset, SendRequest completes) {
            this.header = header;
            this.payload = payload;
            this.offset = offset;
            this.completes = completes;
        }
    }

    /** Takes {@code cost} of eager credit if there is that much; false means: send it rendezvous. */
    boolean tryTakeCredit(long cost) {
        txLock.lock();
        try {
            if (sendCredit < cost) return false;
            sendCredit -= cost;
            return true;
        } finally {
            txLock.unlock();
        }
    }

    /** An eager message of {@code cost} left the receive side (to a receive, or dropped): credit it back in batches. */
    void consumed(long cost) {
        long pending = consumedUnreturned.addAndGet(cost);
        if (pending >= t.unexpectedLimit / 4) {
            long n = consumedUnreturned.getAndSet(0);
            if (n > 0) {
                eagerHeld.addAndGet(-n);
                sendFrame(Frame.CREDIT, 0, 0, 0, n, 0, null, null);
            }
        }
    }

    long nextMsgId() {
        txLock.lock();
        try {
            return ++msgIds;
        } finally {
            txLock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------ outbound

    /**
     * Writes (or queues) one frame. {@code completes}, if given, succeeds once the whole frame is on the socket.
     *
     * @return false if the link is not usable (failed or closed)
     */
    boolean sendFrame(byte type, int flags, long commId, int tag, long length, long msgId, MemorySegment payload,
                      SendRequest completes) {
        boolean done = false;
        txLock.lock();
        try {
            if (state != State.CONNECTED) return false;
            long seq = ++txSeq;
            long ack = rxSeq;
            if (txQueue.isEmpty() && holding && payload == null && completes == null && held.remaining() >= Frame.HEADER) {
                // replies (CTS, ACK, CREDIT) made while handling received frames leave in one write after the batch:
                // one system call and one TCP segment for all of them instead of one each
                Frame.encode(held, type, flags, seq, ack, commId, tag, t.rank, length, msgId);
                return true;
            }
            if (txQueue.isEmpty()) {
                ByteBuffer h = txHeader.clear();
                if (held.position() > 0) {
                    h.put(held.flip());
                    held.clear();
                }
                Frame.encode(h, type, flags, seq, ack, commId, tag, t.rank, length, msgId);
                h.flip();
                long off = writeNow(h, payload, 0);
                if (off < 0) {
                    done = true;
                } else {
                    ByteBuffer rest = ByteBuffer.allocate(h.remaining()).order(ByteOrder.LITTLE_ENDIAN).put(h).flip();
                    txQueue.add(new OutFrame(rest, payload, off, completes));
                    ch.wantWrite();
                    t.progress.wakeup();
                }
            } else {
                ByteBuffer h = ByteBuffer.allocate(Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
                Frame.encode(h, type, flags, seq, ack, commId, tag, t.rank, length, msgId);
                txQueue.add(new OutFrame(h.flip(), payload, 0, completes));
            }
        } catch (IOException | RuntimeException e) {
            // a frame may be half written: the byte stream is broken, the connection goes
            txLock.unlock();
            fail(e instanceof IOException io ? io : new IOException(e));
            if (e instanceof RuntimeException && completes != null) completes.fail(e);
            return false;
        } finally {
            if (txLock.isHeldByCurrentThread()) txLock.unlock();
        }
        if (done && completes != null) completes.succeed(null);
        return true;
    }

    /**
     * Writes header and payload[offset..] until the socket would block. Native payloads go to the socket
     * directly; heap payloads are copied through {@code stage} ({@code offset} then counts bytes taken from
     * the payload, some of which may still sit in the stage).
     *
     * @return -1 when everything was written, else the payload offset reached (header may have bytes left)
     */
    private long writeNow(ByteBuffer header, MemorySegment payload, long offset) throws IOException {
        long size = payload == null ? 0 : payload.byteSize();
        boolean heap = payload != null && !payload.isNative();
        while (true) {
            ByteBuffer body = null;
            if (heap) {
                if (!stage.hasRemaining() && offset < size) {
                    int n = (int) Math.min(STAGE_CAPACITY, size - offset);
                    MemorySegment.copy(payload, offset, stageSeg, 0, n);
                    stage.clear().limit(n);
                    offset += n;
                }
                if (stage.hasRemaining()) body = stage;
            } else if (offset < size) {
                body = payload.asSlice(offset, Math.min(size - offset, NATIVE_CHUNK)).asByteBuffer();
            }
            long written;
            int headerBefore = header.remaining();
            if (headerBefore > 0 && body != null) {
                gather[0] = header;
                gather[1] = body;
                written = ch.write(gather, 0, 2);
                gather[0] = gather[1] = null;
            } else if (headerBefore > 0) {
                written = ch.write(header);
            } else if (body != null) {
                written = ch.write(body);
            } else {
                return -1;
            }
            if (!heap) offset += Math.max(0, written - headerBefore);
            boolean bodyDone = offset >= size && !(heap && stage.hasRemaining());
            if (!header.hasRemaining() && bodyDone) return -1;
            if (written == 0 || (body != null && body.hasRemaining())) return offset;
        }
    }

    /** Ends a batch of received frames: writes the control frames held back during it. */
    private void writeHeld() throws IOException {
        txLock.lock();
        try {
            holding = false;
            if (held.position() == 0 || state != State.CONNECTED) {
                held.clear();
                return;
            }
            ByteBuffer h = held.flip();
            writeNow(h, null, 0);
            if (h.hasRemaining()) {
                ByteBuffer rest = ByteBuffer.allocate(h.remaining()).order(ByteOrder.LITTLE_ENDIAN).put(h).flip();
                txQueue.add(new OutFrame(rest, null, 0, null));
                ch.wantWrite();
                t.progress.wakeup();
            }
            held.clear();
        } finally {
            txLock.unlock();
        }
    }

    /** A batch failed half way: the connection goes, nothing held is written. */
    private void dropHeld() {
        txLock.lock();
        try {
            holding = false;
            held.clear();
        } finally {
            txLock.unlock();
        }
    }

    /** OP_WRITE: drain the queue. */
    private void flushQueue() {
        SendRequest completed;
        do {
            completed = null;
            txLock.lock();
            try {
                OutFrame f = txQueue.peek();
                if (f == null) {
                    ch.writeDone();
                    return;
                }
                long off = writeNow(f.header, f.payload, f.offset);
                if (off >= 0) {
                    f.offset = off;
                    return;
                }
                txQueue.poll();
                completed = f.completes;
            } catch (IOException | RuntimeException e) {
                txLock.unlock();
                fail(e instanceof IOException io ? io : new IOException(e));
                return;
            } finally {
                if (txLock.isHeldByCurrentThread()) txLock.unlock();
            }
            if (completed != null) completed.succeed(null);
        } while (true);
    }

    /** Bytes read from the peer so far (any thread; no ordering with anything else). */
    long rxProgress() {
        return (long) RX_BYTES.getOpaque(this);
    }

    /**
     * Watchdog: sends a HEARTBEAT if no frame went out since the previous call. A link busy writing (its lock held, or
     * frames queued) is skipped: its bytes reach the peer anyway, or the peer does not read them and no heartbeat would
     * get through either.
     */
    void heartbeatIfIdle() {
        if (state != State.CONNECTED || !txLock.tryLock()) return;
        boolean idle;
        try {
            idle = txSeq == txSeqAtBeat && txQueue.isEmpty();
            txSeqAtBeat = txSeq;
        } finally {
            txLock.unlock();
        }
        if (!idle) return;
        sendFrame(Frame.HEARTBEAT, 0, 0, 0, 0, 0, null, null);
        txLock.lock();
        try {
            txSeqAtBeat = txSeq;
        } finally {
            txLock.unlock();
        }
    }

    /** Adds the requests of queued frames to {@code out} that {@code keep} selects. */
    void queuedRequests(java.util.function.Predicate<SendRequest> keep, java.util.List<? super SendRequest> out) {
        txLock.lock();
        try {
            for (OutFrame f : txQueue) if (f.completes != null && keep.test(f.completes)) out.add(f.completes);
        } finally {
            txLock.unlock();
        }
    }

    boolean txIdle() {
        txLock.lock();
        try {
            return txQueue.isEmpty();
        } finally {
            txLock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------- inbound

    void onReady(SelectionKey k) {
        onReady(k.isValid() && k.isWritable(), k.isValid() && k.isReadable());
    }

    /** The conduit may take more bytes ({@code writable}) or has bytes to read ({@code readable}). */
    void onReady(boolean writable, boolean readable) {
        try {
            if (writable) flushQueue();
            if (readable) onReadable();
        } catch (ProtocolException e) {
            t.log().warn("rank {}: protocol error from rank {}: {}; closing the connection", t.rank, peer, e.getMessage());
            fail(e);
        } catch (IOException e) {
            fail(e);
        } catch (RuntimeException e) {
            // e.g. a receive buffer whose arena was closed while its op was in flight: the byte stream can
            // no longer be followed, so the connection goes
            t.log().warn("rank {}: failure while receiving from rank {}: {}; closing the connection", t.rank, peer, e.toString());
            fail(new IOException(e));
        }
    }

    private void onReadable() throws IOException {
        while (state == State.CONNECTED) {
            if (inPayload && rx.position() == 0 && dest != null && dest.isNative() && remaining >= RX_CAPACITY / 4) {
                long chunk = Math.min(remaining, NATIVE_CHUNK);
                int n = ch.read(dest.asSlice(destOff, chunk).asByteBuffer());
                if (n < 0) throw eof();
                if (n == 0) return;
                rxBytes += n;
                destOff += n;
                remaining -= n;
                if (remaining == 0) finishPayload();
                continue;
            }
            // A DATA frame we gave a CTS for may come next: read just its header, so that its payload goes
            // straight into the receive buffer above instead of half of it through rx (a second copy).
            if (!inPayload && rx.position() < Frame.HEADER && !awaitingData.isEmpty()) rx.limit(Frame.HEADER);
            int n = ch.read(rx);
            if (n < 0) throw eof();
            if (n == 0) {
                // nothing new: what rx holds is at most part of a frame, already looked at
                rx.limit(rx.capacity());
                return;
            }
            rxBytes += n;
            rx.flip();
            txLock.lock();
            holding = true;
            txLock.unlock();
            boolean handled = false;
            try {
                consumeBuffered();
                handled = true;
            } finally {
                rx.compact();
                if (!handled) dropHeld();
            }
            writeHeld();
        }
    }

    private IOException eof() {
        return new EOFException(peerSaidBye ? "rank " + peer + " closed its session" : "connection closed by rank " + peer);
    }

    private void consumeBuffered() throws ProtocolException {
        while (true) {
            if (inPayload) {
                int avail = rx.remaining();
                if (avail == 0) return;
                int take = (int) Math.min(avail, remaining);
                if (dest != null) MemorySegment.copy(rxSeg, rx.position(), dest, destOff, take);
                rx.position(rx.position() + take);
                destOff += take;
                remaining -= take;
                if (remaining > 0) return;
                finishPayload();
            } else {
                if (rx.remaining() < Frame.HEADER) return;
                int p = rx.position();
                rx.position(p + Frame.HEADER);
                onHeader(p);
                if (!inPayload && ++rxSinceAck >= ACK_EVERY) sendAck();
            }
        }
    }

    /** Checks and acts on the header at {@code p} (the buffer position is already past it). */
    private void onHeader(int p) throws ProtocolException {
        short magic = rx.getShort(p);
        byte version = rx.get(p + 2);
        byte type = rx.get(p + 3);
        int flags = rx.getInt(p + 4);
        long seq = rx.getLong(p + 8);
        long ack = rx.getLong(p + 16);
        long commId = rx.getLong(p + 24);
        int tag = rx.getInt(p + 32);
        int src = rx.getInt(p + 36);
        long length = rx.getLong(p + 40);
        long msgId = rx.getLong(p + 48);
        if (magic != Frame.MAGIC) throw new ProtocolException("bad magic 0x" + Integer.toHexString(magic & 0xffff));
        if (version != Frame.VERSION) throw new ProtocolException("unsupported frame version " + version);
        if (src != peer) throw new ProtocolException("frame claims source rank " + src);
        if (seq != rxSeq + 1) throw new ProtocolException("frame seq " + seq + " after " + rxSeq);
        if (length < 0) throw new ProtocolException("negative length " + length);
        if (ack > peerAcked) peerAcked = ack;
        switch (type) {
            case Frame.EAGER -> {
                if (length > TcpTransport.MAX_EAGER) throw new ProtocolException("eager frame of " + length + " bytes");
                if (eagerHeld.addAndGet(length + Frame.EAGER_OVERHEAD) > t.unexpectedLimit) {
                    throw new ProtocolException("eager bytes beyond the credit given (limit " + t.unexpectedLimit + ")");
                }
                rxSeq = seq;
                t.onEager(this, commId, tag, length, flags);
                return;
            }
            case Frame.RTS -> t.onRts(this, commId, tag, length, msgId, flags);
            case Frame.CTS -> {
                SendRequest s = awaitingCts.remove(msgId);
                if (s == null) throw new ProtocolException("CTS for unknown message " + msgId);
                if ((flags & Frame.CTS_DISCARD) != 0 || s.isDone()) {
                    // the receiver refused it, or we gave up on it: no data follows, the receiver is told
                    if (s.isDone()) sendFrame(Frame.DATA, Frame.CTS_DISCARD, s.commId, s.tag, 0, msgId, null, null);
                    else s.succeed(null);
                } else {
                    t.sendData(this, s, msgId);
                }
            }
            case Frame.DATA -> {
                RecvRequest r = awaitingData.remove(msgId);
                if (r == null) throw new ProtocolException("DATA for unknown message " + msgId);
                if ((flags & Frame.CTS_DISCARD) != 0) {
                    if (length != 0) throw new ProtocolException("cancelled DATA with " + length + " bytes");
                    r.fail(new io.hcomm4j.CommAbortedException("rank " + t.rank + ": " + r.describe()
                            + ": the sender (rank " + peer + ") gave up on the message"));
                } else {
                    if (length != r.matchedSize) {
                        throw new ProtocolException("DATA of " + length + " bytes for a message of " + r.matchedSize);
                    }
                    // a receive that failed meanwhile (its communicator aborted, a peer failed) no longer owns its buffer
                    if (r.finished()) expectPayload(null, length, null, null, commId, tag, 0);
                    else expectPayload(r.buf, length, r, null, commId, tag, 0);
                }
            }
            case Frame.DATA_REF -> t.onDataRef(this, msgId, commId, ((long) tag << 32) | (flags & 0xFFFFFFFFL), length);
            case Frame.DATA_DONE -> t.onDataDone(this, msgId, flags);
            case Frame.ACK, Frame.HEARTBEAT -> { }
            case Frame.BYE -> peerSaidBye = true;
            case Frame.FAILED -> {
                if (tag < 0 || tag >= t.size) throw new ProtocolException("FAILED notice for rank " + tag);
                rxSeq = seq;
                t.onFailedNotice(this, tag, flags);
                return;
            }
            case Frame.ABORT -> {
                rxSeq = seq;
                t.onAbortNotice(this, commId);
                return;
            }
            case Frame.STATUS_REQUEST -> {
                rxSeq = seq;
                t.onStatusRequest(this);
                return;
            }
            case Frame.CREDIT -> {
                txLock.lock();
                try {
                    sendCredit += length;
                    if (sendCredit > peerLimit) throw new ProtocolException("credit beyond the limit the peer announced");
                } finally {
                    txLock.unlock();
                }
            }
            default -> throw new ProtocolException("unknown frame type " + type);
        }
        rxSeq = seq;
    }

    /** Next {@code length} bytes go to {@code target} (null: discard); then the recv or unexpected entry completes. */
    void expectPayload(MemorySegment target, long length, RecvRequest recv, byte[] unexpected, long commId, int tag, int flags) {
        payloadFlags = flags;
        inPayload = true;
        dest = target;
        destOff = 0;
        remaining = length;
        payloadRecv = recv;
        payloadUnexpected = unexpected;
        payloadCommId = commId;
        payloadTag = tag;
        if (length == 0) finishPayload();
    }

    private void finishPayload() {
        inPayload = false;
        RecvRequest r = payloadRecv;
        byte[] u = payloadUnexpected;
        dest = null;
        payloadRecv = null;
        payloadUnexpected = null;
        if (++rxSinceAck >= ACK_EVERY) sendAck();
        if (r != null) {
            if (!r.isDone()) r.succeedMatched();
        } else if (u != null) {
            t.onUnexpectedComplete(this, payloadCommId, payloadTag, u, payloadFlags);
        }
    }

    private void sendAck() {
        rxSinceAck = 0;
        sendFrame(Frame.ACK, 0, 0, 0, 0, 0, null, null);
    }

    // ---------------------------------------------------------------------------------------- lifecycle

    /**
     * Installs a connected, authenticated channel (called with this link's monitor held).
     *
     * @param peerUnexpectedLimit the peer's per-peer eager buffer, from the hello: our initial send credit
     */
    void install(Conduit channel, long peerUnexpectedLimit) throws IOException {
        txLock.lock();
        try {
            peerLimit = peerUnexpectedLimit;
            sendCredit = peerUnexpectedLimit;
        } finally {
            txLock.unlock();
        }
        this.ch = channel;
        channel.start();
        state = State.CONNECTED;
        t.progress.wakeup();
        t.progress.selector.wakeup();
        notifyAll();
        // a connection that completes while the session closes was missed by close's BYE round: its end is orderly too
        if (t.closing) sendFrame(Frame.BYE, 0, 0, 0, 0, 0, null, null);
    }

    /** The connection broke: close it and fail everything that depended on this peer. */
    void fail(Exception cause) {
        boolean wasConnected;
        synchronized (this) {
            if (state == State.FAILED || state == State.CLOSED) return;
            wasConnected = state == State.CONNECTED;
            state = State.FAILED;
            notifyAll();
        }
        closeChannel();
        if (peerSaidBye) {
            t.log().debug("rank {}: rank {} closed its session", t.rank, peer);
        } else if (!t.closing && !(cause instanceof ReportedFailure) && !(cause instanceof ProtocolException)) { // those were logged
            t.log().warn("rank {}: lost the connection to rank {}: {}", t.rank, peer, cause.toString());
        }
        t.onPeerFailed(this, cause, wasConnected);
    }

    /** Drains queued frames that will never be written (called after the state left CONNECTED). */
    java.util.List<SendRequest> drainQueued() {
        java.util.List<SendRequest> out = new java.util.ArrayList<>();
        txLock.lock();
        try {
            for (OutFrame f : txQueue) if (f.completes != null) out.add(f.completes);
            txQueue.clear();
        } finally {
            txLock.unlock();
        }
        return out;
    }

    RecvRequest payloadRecv() {
        return payloadRecv;
    }

    void closeChannel() {
        Conduit c = ch;
        if (c != null) {
            try {
                c.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    /** Orderly close: BYE, then the socket (the caller drained the queue first). */
    void closeOrderly() {
        synchronized (this) {
            if (state != State.CONNECTED) {
                if (state == State.IDLE || state == State.CONNECTING) state = State.CLOSED;
                notifyAll();
                return;
            }
        }
        sendFrame(Frame.BYE, 0, 0, 0, 0, 0, null, null);
    }

    void markClosed() {
        synchronized (this) {
            if (state == State.CONNECTED || state == State.IDLE || state == State.CONNECTING) state = State.CLOSED;
            notifyAll();
        }
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

    /** A header or frame sequence that no well-behaved peer sends. */
    static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }
}
