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
 */
final class PeerLink {
    enum State { IDLE, CONNECTING, CONNECTED, RECONNECTING, CLOSED, FAILED }

    private static final int RX_CAPACITY = 128 * 1024;
    /** Heap payloads are copied through this much direct memory per connection (the socket needs direct memory). */
    private static final int STAGE_CAPACITY = 128 * 1024;
    /** Largest chunk handed to one socket call for a native segment (ByteBuffers stop at 2 GiB). */
    private static final long NATIVE_CHUNK = 256L << 20;
    private static final int ACK_EVERY = 128;
    /** Reliable links: an ACK once this many eager payload bytes arrived since the last one (bounds the peer's resend log). */
    private static final long ACK_BYTES = 1L << 20;
    private static final java.lang.invoke.VarHandle RX_BYTES;
    private static final java.lang.invoke.VarHandle RX_DONE;

    static {
        try {
            var lookup = java.lang.invoke.MethodHandles.lookup();
            RX_BYTES = lookup.findVarHandle(PeerLink.class, "rxBytes", long.class);
            RX_DONE = lookup.findVarHandle(PeerLink.class, "rxDone", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final org.slf4j.Logger LOG = PeerTransport.LOG;

    private final LinkHost host;
    final int peer;
    /** This rank, the world size, this rank's per-peer eager buffer and the progress engine: fixed for the link's life. */
    private final int rank;
    private final int size;
    private final long unexpectedLimit;
    private final Progress progress;

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
    /** Sends whose data the peer reads from our mapping (DATA_REF, shared memory), by msgId, until its DATA_DONE. */
    final ConcurrentHashMap<Long, SendRequest> awaitingDone = new ConcurrentHashMap<>();

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
    private final ByteBuffer txHeader = ByteBuffer.allocateDirect((MAX_HELD + 1) * Frame.HEADER + INLINE_MAX)
            .order(ByteOrder.LITTLE_ENDIAN);
    private final MemorySegment txHeaderSeg = MemorySegment.ofBuffer(txHeader);
    /** Payloads up to this size are copied behind their header in {@link #txHeader} and written with it. */
    private static final int INLINE_MAX = 256;
    private final ByteBuffer[] gather = new ByteBuffer[2];
    private final ByteBuffer stage = ByteBuffer.allocateDirect(STAGE_CAPACITY);
    private final MemorySegment stageSeg = MemorySegment.ofBuffer(stage);
    private long txSeq;
    private long msgIds;
    /** {@link #txSeq} when the watchdog last looked: unchanged means nothing went out since (under txLock). */
    private long txSeqAtBeat;
    /** Frames the peer has not acknowledged yet (reliable links only; under txLock). */
    private ResendLog log;

    // inbound (progress token holder only)
    private final ByteBuffer rx = ByteBuffer.allocateDirect(RX_CAPACITY).order(ByteOrder.LITTLE_ENDIAN);
    private final MemorySegment rxSeg = MemorySegment.ofBuffer(rx);
    /** Bytes read from the peer so far: the watchdog's sign of life (written by the poller, read opaquely). */
    private long rxBytes;
    /** Seq of the last header read. */
    private long rxSeq;
    /**
     * Seq of the last frame received completely (its payload too): the ack this side sends, and where a new connection
     * resumes. Written by the poller with release semantics, read by senders.
     */
    private long rxDone;
    private long rxSinceAck;
    private long rxPayloadSinceAck;
    /** Acknowledge right after the current frame (a BYE on a reliable link). */
    private boolean ackSoon;
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
    /** Type and seq of the header being handled, and of the frame whose payload is being read, and its length. */
    private byte hdrType;
    private long hdrSeq;
    private byte payloadType;
    private long payloadSeq;
    private long payloadLength;
    /** The payload being read belongs to a frame received before (a duplicate): it is read and dropped. */
    private boolean dupPayload;
    /** A payload frame read in part when the connection was lost (0: none): it comes again first, and is read again whole. */
    private long partialSeq;
    /** The receive side was rolled back to the last complete frame since the connection was lost (token holder). */
    private boolean rxDetached;
    /** Sends completed by an acknowledgement (poller only; completed outside txLock). */
    private final java.util.ArrayList<SendRequest> completedByAck = new java.util.ArrayList<>();

    // test hook: drop the connection abruptly once this many bytes were read (poller), see PeerTransport#dropAfter
    volatile long dropAtRx = Long.MAX_VALUE;
    volatile PeerTransport.Drop dropHow = PeerTransport.Drop.RESET;

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

    PeerLink(LinkHost host, int peer) {
        this.host = host;
        this.peer = peer;
        this.rank = host.rank();
        this.size = host.worldSize();
        this.unexpectedLimit = host.unexpectedLimit();
        this.progress = host.progress();
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

    /** An eager message of {@code cost} left the receive side (to a receive, or dropped): credit it back in batches. */
    void consumed(long cost) {
        long pending = consumedUnreturned.addAndGet(cost);
        if (pending >= unexpectedLimit / 4) {
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
     * Writes (or queues) one frame. {@code completes}, if given, succeeds once the whole frame is on the socket (on a
     * reliable link: a DATA once the peer acknowledged it; an EAGER frame is written from its copy in the resend log).
     * While the link is RECONNECTING the frame only goes to the resend log, and out once the connection is back.
     *
     * @return false if the link is not usable (failed or closed)
     */
    boolean sendFrame(byte type, int flags, long commId, int tag, long length, long msgId, MemorySegment payload,
                      SendRequest completes) {
        return send(type, flags, commId, tag, length, msgId, payload, completes, -1) == SENT;
    }

    /** {@link #sendEager}: the frame went (or is queued, or kept for a re-established connection). */
    static final int SENT = 0;
    /** {@link #sendEager}: not enough eager credit, nothing was sent: send it rendezvous. */
    static final int NO_CREDIT = 1;
    /** {@link #sendEager}: the link is not usable (failed or closed). */
    static final int UNUSABLE = 2;

    /**
     * Takes the eager credit for {@code payload} and sends it as an EAGER frame completing {@code completes}, under one
     * hold of the tx lock (the blocking send's path: one lock round instead of two).
     */
    int sendEager(int flags, long commId, int tag, MemorySegment payload, SendRequest completes) {
        long size = payload.byteSize();
        return send(Frame.EAGER, flags, commId, tag, size, 0, payload, completes, size + Frame.EAGER_OVERHEAD);
    }

    /** {@link #sendFrame}, first taking {@code credit} of eager credit if it is not negative. */
    private int send(byte type, int flags, long commId, int tag, long length, long msgId, MemorySegment payload,
                     SendRequest completes, long credit) {
        boolean written;
        ResendLog lg = null;
        txLock.lock();
        try {
            State st = state;
            if (st != State.CONNECTED && st != State.RECONNECTING) return UNUSABLE;
            if (credit >= 0) {
                if (sendCredit < credit) return NO_CREDIT;
                sendCredit -= credit;
            }
            long seq = ++txSeq;
            long ack = rxDone();
            lg = log;
            if (lg != null) {
                boolean eager = type == Frame.EAGER;
                lg.append(type, flags, seq, ack, commId, tag, rank, length, msgId, payload, eager, eager ? null : completes);
                if (!eager) completes = null; // a DATA send completes when the peer acknowledges the frame
                else if (payload != null && payload.byteSize() > 0) payload = lg.copiedPayload(seq);
            }
            written = st == State.RECONNECTING || writeOrQueue(type, flags, seq, ack, commId, tag, length, msgId, payload, completes);
        } catch (IOException e) {
            // a frame may be half written: the byte stream is broken, the connection goes (or is re-established)
            txLock.unlock();
            lost(e);
            if (lg == null) return UNUSABLE;
            // kept in the resend log, an eager payload as a copy: the send is done
            if (completes != null) completes.succeed(null);
            return SENT;
        } catch (RuntimeException e) {
            txLock.unlock();
            if (lg != null && lostMeanwhile(e)) {
                if (completes != null) completes.succeed(null);
                return SENT;
            }
            fail(new IOException(e));
            if (completes != null) completes.fail(e);
            return UNUSABLE;
        } finally {
            if (txLock.isHeldByCurrentThread()) txLock.unlock();
        }
        if (written && completes != null) completes.succeed(null);
        return SENT;
    }

    /**
     * Whether {@code e}, thrown by a write, comes from the conduit being closed under the writer because the connection
     * was lost meanwhile (shared-memory rings unmapped by another thread): the frame is in the resend log, nothing failed.
     */
    private boolean lostMeanwhile(RuntimeException e) {
        return reliable && e instanceof IllegalStateException && state != State.CONNECTED;
    }

    /** Writes the frame now, or queues it (txLock held, CONNECTED); true if it was written whole. */
    private boolean writeOrQueue(byte type, int flags, long seq, long ack, long commId, int tag, long length, long msgId,
                                 MemorySegment payload, SendRequest completes) throws IOException {
        if (txQueue.isEmpty() && holding && payload == null && completes == null && held.remaining() >= Frame.HEADER) {
            // replies (CTS, ACK, CREDIT) made while handling received frames leave in one write after the batch:
            // one system call and one TCP segment for all of them instead of one each
            Frame.encode(held, type, flags, seq, ack, commId, tag, rank, length, msgId);
            return false;
        }
        if (txQueue.isEmpty()) {
            ByteBuffer h = txHeader.clear();
            if (held.position() > 0) {
                h.put(held.flip());
                held.clear();
            }
            Frame.encode(h, type, flags, seq, ack, commId, tag, rank, length, msgId);
            if (payload != null && payload.byteSize() <= INLINE_MAX) {
                // a small payload follows its header in the same buffer: one contiguous write, no view of the payload
                int size = (int) payload.byteSize();
                MemorySegment.copy(payload, 0, txHeaderSeg, h.position(), size);
                h.position(h.position() + size);
                payload = null;
            }
            h.flip();
            long off = writeNow(h, payload, 0);
            if (off < 0) return true;
            ByteBuffer rest = ByteBuffer.allocate(h.remaining()).order(ByteOrder.LITTLE_ENDIAN).put(h).flip();
            txQueue.add(new OutFrame(rest, payload, off, completes));
            ch.wantWrite();
            progress.wakeup();
            return false;
        }
        ByteBuffer h = ByteBuffer.allocate(Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
        Frame.encode(h, type, flags, seq, ack, commId, tag, rank, length, msgId);
        txQueue.add(new OutFrame(h.flip(), payload, 0, completes));
        return false;
    }

    /** Seq of the last frame received completely (any thread). */
    long rxDone() {
        return (long) RX_DONE.getAcquire(this);
    }

    private void setRxDone(long seq) {
        RX_DONE.setRelease(this, seq);
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
                progress.wakeup();
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
            } catch (IOException e) {
                txLock.unlock();
                lost(e);
                return;
            } catch (RuntimeException e) {
                txLock.unlock();
                if (!lostMeanwhile(e)) fail(new IOException(e));
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

    /** Adds the requests of queued frames (and of sends waiting for an acknowledgement) to {@code out} that {@code keep} selects. */
    void queuedRequests(java.util.function.Predicate<SendRequest> keep, java.util.List<? super SendRequest> out) {
        txLock.lock();
        try {
            for (OutFrame f : txQueue) if (f.completes != null && keep.test(f.completes)) out.add(f.completes);
            if (log != null) log.pending(keep, out);
        } finally {
            txLock.unlock();
        }
    }

    /** Nothing queued, and on a reliable link every frame acknowledged by the peer (close waits for it). */
    boolean delivered() {
        txLock.lock();
        try {
            return txQueue.isEmpty() && (log == null || log.frames() == 0);
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
            LOG.warn("rank {}: protocol error from rank {}: {}; closing the connection", rank, peer, e.getMessage());
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

    private void onReadable() throws IOException {
        while (state == State.CONNECTED) {
            if (inPayload && rx.position() == 0 && dest != null && dest.isNative() && remaining >= RX_CAPACITY / 4) {
                long chunk = Math.min(remaining, NATIVE_CHUNK);
                int n = ch.read(dest.asSlice(destOff, chunk).asByteBuffer());
                if (n < 0) throw eof();
                if (n == 0) return;
                rxBytes += n;
                if (rxBytes >= dropAtRx) dropByHook();
                destOff += n;
                remaining -= n;
                if (remaining == 0) finishPayload();
                continue;
            }
            // A DATA frame we gave a CTS for may come next: read just its header, so that its payload goes
            // straight into the receive buffer above instead of half of it through rx (a second copy).
            if (!inPayload && rx.position() < Frame.HEADER && !awaitingData.isEmpty()) rx.limit(Frame.HEADER);
            Conduit c = ch;
            int n = c.read(rx);
            if (n < 0) throw eof();
            if (n == 0) {
                // nothing new: what rx holds is at most part of a frame, already looked at
                rx.limit(rx.capacity());
                return;
            }
            rxBytes += n;
            if (rxBytes >= dropAtRx) dropByHook();
            rx.flip();
            // over a socket, control frames made while handling the batch are held and leave in one write after it
            // (one system call); into rings each is only a copy, so nothing is held (two tx-lock rounds fewer)
            boolean hold = !(c instanceof ShmConduit);
            if (hold) {
                txLock.lock();
                holding = true;
                txLock.unlock();
            }
            boolean handled = false;
            try {
                consumeBuffered();
                handled = true;
            } finally {
                rx.compact();
                if (!handled && hold) dropHeld();
            }
            if (hold) writeHeld();
        }
    }

    /** Test hook (poller): drops the connection abruptly, as if it broke right after this read. */
    private void dropByHook() throws IOException {
        dropAtRx = Long.MAX_VALUE;
        ch.abort(dropHow);
        throw new IOException("connection dropped by a test hook (" + dropHow + ") after " + rxBytes + " bytes");
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
                if (!inPayload) {
                    setRxDone(rxSeq);
                    if (++rxSinceAck >= ACK_EVERY || ackSoon) sendAck();
                }
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
        if (length < 0) throw new ProtocolException("negative length " + length);
        if (seq != rxSeq + 1) {
            if (reliable && seq > 0 && seq <= rxSeq) {
                dropDuplicate(type, seq, length);
                return;
            }
            throw new ProtocolException("frame seq " + seq + " after " + rxSeq);
        }
        if (ack > peerAcked) {
            peerAcked = ack;
            if (reliable) acknowledged(ack);
        }
        hdrType = type;
        hdrSeq = seq;
        if (partialSeq != 0) {
            // the first frame on a new connection is the one we had read in part: its payload is read again, whole
            if (seq != partialSeq || type != payloadType || length != payloadLength) {
                throw new ProtocolException("frame " + seq + " (" + Frame.typeName(type) + ", " + length + " bytes) instead of frame "
                        + partialSeq + " (" + Frame.typeName(payloadType) + ", " + payloadLength + " bytes) that was cut off");
            }
            rxSeq = seq;
            restartPartial();
            return;
        }
        switch (type) {
            case Frame.EAGER -> {
                if (length > PeerTransport.MAX_EAGER) throw new ProtocolException("eager frame of " + length + " bytes");
                if (eagerHeld.addAndGet(length + Frame.EAGER_OVERHEAD) > unexpectedLimit) {
                    throw new ProtocolException("eager bytes beyond the credit given (limit " + unexpectedLimit + ")");
                }
                rxSeq = seq;
                host.onEager(this, commId, tag, length, flags);
                return;
            }
            case Frame.RTS -> host.onRts(this, commId, tag, length, msgId, flags);
            case Frame.CTS -> {
                SendRequest s = awaitingCts.remove(msgId);
                if (s == null) throw new ProtocolException("CTS for unknown message " + msgId);
                if ((flags & Frame.CTS_DISCARD) != 0 || s.isDone()) {
                    // the receiver refused it, or we gave up on it: no data follows, the receiver is told
                    if (s.isDone()) sendFrame(Frame.DATA, Frame.CTS_DISCARD, s.commId, s.tag, 0, msgId, null, null);
                    else s.succeed(null);
                } else {
                    host.sendData(this, s, msgId);
                }
            }
            case Frame.DATA -> {
                RecvRequest r = awaitingData.remove(msgId);
                if (r == null) throw new ProtocolException("DATA for unknown message " + msgId);
                if ((flags & Frame.CTS_DISCARD) != 0) {
                    if (length != 0) throw new ProtocolException("cancelled DATA with " + length + " bytes");
                    r.fail(new io.hcomm4j.CommAbortedException("rank " + rank + ": " + r.describe()
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
            case Frame.DATA_REF -> host.onDataRef(this, msgId, commId, ((long) tag << 32) | (flags & 0xFFFFFFFFL), length);
            case Frame.DATA_DONE -> host.onDataDone(this, msgId, flags);
            case Frame.ACK, Frame.HEARTBEAT -> { }
            case Frame.BYE -> {
                peerSaidBye = true;
                ackSoon = reliable; // the closing peer waits for everything it sent to be acknowledged
            }
            case Frame.FAILED -> {
                if (tag < 0 || tag >= size) throw new ProtocolException("FAILED notice for rank " + tag);
                rxSeq = seq;
                host.onFailedNotice(this, tag, flags);
                return;
            }
            case Frame.ABORT -> {
                rxSeq = seq;
                host.onAbortNotice(this, commId);
                return;
            }
            case Frame.STATUS_REQUEST -> {
                rxSeq = seq;
                host.onStatusRequest(this);
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
        payloadType = hdrType;
        payloadSeq = hdrSeq;
        payloadLength = length;
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
        if (dupPayload) {
            dupPayload = false;
            return;
        }
        setRxDone(payloadSeq);
        // reliable: a DATA send completes when acknowledged, so say so at once; eager copies are bounded by bytes
        if (++rxSinceAck >= ACK_EVERY || (reliable && (payloadType == Frame.DATA
                || (rxPayloadSinceAck += payloadLength) >= ACK_BYTES))) {
            sendAck();
        }
        if (r != null) {
            if (!r.isDone()) r.succeedMatched();
        } else if (u != null) {
            host.onUnexpectedComplete(this, payloadCommId, payloadTag, u, payloadFlags);
        }
    }

    private void sendAck() {
        ackSoon = false;
        rxSinceAck = 0;
        rxPayloadSinceAck = 0;
        sendFrame(Frame.ACK, 0, 0, 0, 0, 0, null, null);
    }

    /** The peer has every frame up to {@code ack} (poller): they leave the resend log, DATA sends waiting for it complete. */
    private void acknowledged(long ack) {
        java.util.ArrayList<SendRequest> done = completedByAck;
        txLock.lock();
        try {
            if (log != null) log.acknowledge(ack, done);
        } finally {
            txLock.unlock();
        }
        if (done.isEmpty()) return;
        for (int i = 0; i < done.size(); i++) done.get(i).succeed(null);
        done.clear();
    }

    /** A frame received before came again (reliable links; not expected: a new connection resumes right after the last one). */
    private void dropDuplicate(byte type, long seq, long length) {
        host.countDuplicate();
        LOG.warn("rank {}: frame {} ({}) from rank {} came a second time (last received {}); dropped", rank, seq,
                Frame.typeName(type), peer, rxSeq);
        if (type == Frame.EAGER || type == Frame.DATA) {
            hdrType = type;
            hdrSeq = seq;
            dupPayload = true;
            expectPayload(null, length, null, null, 0, 0, 0);
        }
    }

    /** The payload cut off with the old connection comes again: read it whole, into the same place, from its start. */
    private void restartPartial() {
        partialSeq = 0;
        RecvRequest r = payloadRecv;
        if (r != null && r.finished()) dest = null; // failed meanwhile: its buffer is no longer ours to write
        inPayload = true;
        destOff = 0;
        remaining = payloadLength;
    }

    // ---------------------------------------------------------------------------------------- lifecycle

    /**
     * Installs a connected, authenticated channel (called with this link's monitor held).
     *
     * @param peerUnexpectedLimit the peer's per-peer eager buffer, from the hello: our initial send credit
     */
    void install(Conduit channel, long peerUnexpectedLimit, boolean reliable) throws IOException {
        txLock.lock();
        try {
            peerLimit = peerUnexpectedLimit;
            sendCredit = peerUnexpectedLimit;
            this.reliable = reliable;
            log = reliable ? new ResendLog() : null;
        } finally {
            txLock.unlock();
        }
        epoch = 1;
        this.ch = channel;
        channel.start();
        state = State.CONNECTED;
        progress.wakeup();
        progress.selector.wakeup();
        notifyAll();
        // a connection that completes while the session closes was missed by close's BYE round: its end is orderly too
        if (host.closing()) sendFrame(Frame.BYE, 0, 0, 0, 0, 0, null, null);
    }

    /**
     * The connection broke (end of stream or reset without a BYE, a failed write, or silence for the heartbeat timeout):
     * on a reliable link it is re-established (state RECONNECTING, ops keep waiting), otherwise the peer failed.
     */
    void lost(Exception cause) {
        if (!mayReconnect(cause)) {
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
            notifyAll();
        }
        host.retire(old);
        LOG.warn("rank {}: lost the connection to rank {}: {}; re-establishing it (HCOMM_RETRY_MAX {})", rank, peer,
                cause.toString(), host.retryMax());
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
     * is kept where it goes: that frame comes again first ({@link #restartPartial}).
     */
    void detachRx() {
        // connected again meanwhile (the peer's attempt was taken here): the live stream must not be touched
        if (rxDetached || state == State.CONNECTED) return;
        rxDetached = true;
        if (inPayload) {
            if (dupPayload) {
                dupPayload = false;
                dest = null;
            } else {
                partialSeq = payloadSeq;
                rxSeq = payloadSeq - 1;
            }
            inPayload = false;
        }
        rx.clear();
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
        long frames = 0, bytes = 0;
        detachRx(); // done already, unless the link was connected and lost again since
        txLock.lock();
        try {
            if (peerResume > txSeq || peerResume < log.firstSeq() - 1) {
                throw new ProtocolException("rank " + peer + " resumes after frame " + peerResume + ", but frames "
                        + log.firstSeq() + ".." + txSeq + " are the ones not acknowledged");
            }
            log.acknowledge(peerResume, done);
            for (OutFrame f : txQueue) if (f.completes != null) done.add(f.completes);
            txQueue.clear();
            held.clear();
            holding = false;
            stage.clear().limit(0);
            boolean shm = channel instanceof ShmConduit;
            long ack = rxDone();
            for (long s = peerResume + 1; s <= txSeq; s++) {
                byte type = log.type(s);
                if (!shm && (type == Frame.DATA_REF || type == Frame.DATA_DONE)) {
                    throw new ProtocolException("cannot resume: a one-copy message (" + Frame.typeName(type)
                            + ") is in flight and the new connection is not shared memory");
                }
                txQueue.add(new OutFrame(log.header(s, ack), log.payload(s), 0, null));
                frames++;
                bytes += log.wireBytes(s);
            }
            ch = channel;
            host.releaseRetired(this); // the old rings: nobody can touch them now (token and tx lock held)
            rxDetached = false;
            epoch = newEpoch;
            state = State.CONNECTED;
            channel.start();
            if (!txQueue.isEmpty()) channel.wantWrite();
        } finally {
            txLock.unlock();
        }
        if (peerResume > peerAcked) peerAcked = peerResume;
        reconnects++;
        host.countResumed(frames, bytes);
        lastResent = frames;
        lastResentBytes = bytes;
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
        txLock.lock();
        try {
            return log != null && peerResume <= txSeq && peerResume >= log.firstSeq() - 1;
        } finally {
            txLock.unlock();
        }
    }

    /** Connections re-established on this link (under the monitor), and what the last one sent again. */
    long reconnects;
    long lastResent;
    long lastResentBytes;

    /**
     * The connection broke for good: the transport records the peer's failure and tells the layer above, then this link
     * closes ({@link #markFailed}) and everything that depended on the peer fails.
     */
    void fail(Exception cause) {
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

    /** {@link #markFailed}: the link was failed or closed already. */
    static final int ALREADY_FAILED = -1;
    /** {@link #markFailed}: the link had no connection (it was being opened, or idle). */
    static final int WAS_NOT_CONNECTED = 0;
    /** {@link #markFailed}: the link had a connection (without a BYE, evidence that the peer failed). */
    static final int WAS_CONNECTED = 1;

    /**
     * Adds every request waiting on this link to {@code out} and forgets them (the link failed or closed): queued frames,
     * sends waiting for an acknowledgement, CTS, DATA or DATA_DONE, and the receive whose payload was being read.
     */
    void drainRequests(java.util.List<Request<?>> out) {
        out.addAll(drainQueued());
        if (payloadRecv != null) out.add(payloadRecv);
        out.addAll(awaitingCts.values());
        awaitingCts.clear();
        out.addAll(awaitingData.values());
        awaitingData.clear();
        out.addAll(awaitingDone.values());
        awaitingDone.clear();
    }

    /** Drains queued frames that will never be written, and sends waiting for an acknowledgement (the state left CONNECTED for good). */
    java.util.List<SendRequest> drainQueued() {
        java.util.List<SendRequest> out = new java.util.ArrayList<>();
        txLock.lock();
        try {
            for (OutFrame f : txQueue) if (f.completes != null) out.add(f.completes);
            txQueue.clear();
            if (log != null) log.clear(out);
        } finally {
            txLock.unlock();
        }
        return out;
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

    /** A header or frame sequence that no well-behaved peer sends. */
    static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }
}
