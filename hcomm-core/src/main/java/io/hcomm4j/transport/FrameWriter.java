package io.hcomm4j.transport;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;

/**
 * The write side of one {@link PeerLink}: frames out, from any thread, under the link's tx lock. A frame is written
 * straight to the conduit when nothing is queued before it; what the conduit does not take is queued and written on
 * OP_WRITE ({@link #flushQueue}). Control frames made while a batch of received frames is handled are held and leave
 * in one write after it. On a reliable link every frame also goes to the {@link ResendLog} until the peer acknowledges
 * it. The eager send credit (what the peer still buffers for us) is taken here (RMA frames take none).
 *
 * <p>Over shared memory an EAGER message of at most {@link ShmSlots#PAYLOAD_MAX} bytes goes into the pair's next free
 * slot instead, when nothing is queued ({@link ShmConduit#writeSlot}); its seq comes from the same counter.
 *
 * <p>Nothing on the per-message path allocates, except a frame that has to be queued behind others.
 */
final class FrameWriter {
    /** {@link #sendEager}: the frame went (or is queued, or kept for a re-established connection). */
    static final int SENT = 0;
    /** {@link #sendEager}: not enough eager credit, nothing was sent: send it rendezvous. */
    static final int NO_CREDIT = 1;
    /** {@link #sendEager}: the link is not usable (failed or closed). */
    static final int UNUSABLE = 2;

    /** Heap payloads are copied through this much direct memory per connection (the socket needs direct memory). */
    private static final int STAGE_CAPACITY = 128 * 1024;
    /** Control frames held back while one batch of received frames is handled, then written together. */
    private static final int MAX_HELD = 64;
    /** Payloads up to this size are copied behind their header in {@link #txHeader} and written with it. */
    private static final int INLINE_MAX = 256;

    private final PeerLink link;
    private final int rank;
    private final Progress progress;
    /** The link's tx lock: guards every field below. */
    private final ReentrantLock lock;

    private final ArrayDeque<OutFrame> txQueue = new ArrayDeque<>();
    /** Headers of frames held back; never non-empty while txQueue is not empty. */
    private ByteBuffer held;
    /** Whether a thread is handling a batch of received frames and will write {@link #held} at its end. */
    private boolean holding;
    /** The held headers followed by the next frame's header: one write for all of them. */
    private ByteBuffer txHeader;
    private MemorySegment txHeaderSeg;
    private final ByteBuffer[] gather = new ByteBuffer[2];
    /** Staging of heap payloads. This and the header buffers are allocated at the first connection ({@link #reset}). */
    private ByteBuffer stage;
    private MemorySegment stageSeg;
    private long txSeq;
    private long msgIds;
    /** {@link #txSeq} when the watchdog last looked: unchanged means nothing went out since. */
    private long txSeqAtBeat;
    /** Frames the peer has not acknowledged yet (reliable links only). */
    private ResendLog log;

    /** The resend log (null: the link is not reliable); for tests. */
    ResendLog resendLog() {
        lock.lock();
        try {
            return log;
        } finally {
            lock.unlock();
        }
    }
    /**
     * Eager flow control. A sender may have at most the receiver's unexpected limit of eager bytes (plus
     * {@link Frame#EAGER_OVERHEAD} each) that the receiver has not yet handed to a receive; past that it sends
     * rendezvous (only an RTS travels), so a receiver never buffers more than its limit per peer and a sender
     * far ahead never deadlocks a legal program.
     */
    private long sendCredit;
    /** The peer's limit (from the hello); credit returned beyond it is a protocol error. */
    private long peerLimit;
    /** A BYE went: nothing follows it, chunks neither. */
    private boolean byeSent;

    FrameWriter(PeerLink link, int rank, Progress progress, ReentrantLock lock) {
        this.link = link;
        this.rank = rank;
        this.progress = progress;
        this.lock = lock;
    }

    /** A frame (or its unwritten rest) waiting for the conduit. */
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

    /** A connection comes up for the first time: the peer's buffer is our credit; reliable links keep a resend log. */
    void reset(long peerUnexpectedLimit, boolean reliable) {
        lock.lock();
        try {
            if (held == null) {
                held = ByteBuffer.allocateDirect(MAX_HELD * Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
                txHeader = ByteBuffer.allocateDirect((MAX_HELD + 1) * Frame.HEADER + INLINE_MAX).order(ByteOrder.LITTLE_ENDIAN);
                txHeaderSeg = MemorySegment.ofBuffer(txHeader);
                stage = ByteBuffer.allocateDirect(STAGE_CAPACITY);
                stageSeg = MemorySegment.ofBuffer(stage);
                stage.limit(0);
            }
            peerLimit = peerUnexpectedLimit;
            sendCredit = peerUnexpectedLimit;
            log = reliable ? link.newResendLog() : null;
        } finally {
            lock.unlock();
        }
    }

    long nextMsgId() {
        lock.lock();
        try {
            return ++msgIds;
        } finally {
            lock.unlock();
        }
    }

    /** See {@link PeerLink#sendFrame}. */
    boolean sendFrame(byte type, int flags, long commId, int tag, long length, long msgId, MemorySegment payload,
                      SendRequest completes) {
        return send(type, flags, commId, tag, length, msgId, payload, completes, -1) == SENT;
    }

    /** See {@link PeerLink#sendEager}. */
    int sendEager(int flags, long commId, int tag, MemorySegment payload, SendRequest completes) {
        long size = payload.byteSize();
        return send(Frame.EAGER, flags, commId, tag, size, 0, payload, completes, size + Frame.EAGER_OVERHEAD);
    }

    /** {@link #sendFrame}, first taking {@code credit} of eager credit if it is not negative. */
    private int send(byte type, int flags, long commId, int tag, long length, long msgId, MemorySegment payload,
                     SendRequest completes, long credit) {
        boolean written;
        ResendLog lg = null;
        lock.lock();
        try {
            PeerLink.State st = link.state;
            if (st != PeerLink.State.CONNECTED && st != PeerLink.State.RECONNECTING) return UNUSABLE;
            if (credit >= 0) {
                if (sendCredit < credit) return NO_CREDIT;
                sendCredit -= credit;
            }
            if (type == Frame.EAGER && length <= ShmSlots.PAYLOAD_MAX && st == PeerLink.State.CONNECTED && log == null
                    && txQueue.isEmpty() && !holding && link.ch instanceof ShmConduit sc && sc.slotFree()) {
                // the short road: one cache line the receiver polls, no header, no ring index (see ShmSlots)
                sc.writeSlot(++txSeq, commId, tag, flags, payload);
                lock.unlock();
                if (completes != null) completes.succeed(null);
                return SENT;
            }
            long seq = ++txSeq;
            long ack = link.reader.rxDone();
            if (type == Frame.BYE) byeSent = true;
            lg = log;
            if (lg != null) {
                // EAGER and small RMA payloads are copied into the log: the send completes once written, as without it
                boolean copy = type == Frame.EAGER || (type == Frame.RMA && length <= Frame.RMA_COPY_MAX);
                lg.append(type, flags, seq, ack, commId, tag, rank, length, msgId, payload, copy, copy ? null : completes);
                if (!copy) completes = null; // DATA, a large RMA: complete when the peer acknowledges the frame
                else if (payload != null && payload.byteSize() > 0) payload = lg.copiedPayload(seq);
            }
            written = st == PeerLink.State.RECONNECTING
                    || writeOrQueue(type, flags, seq, ack, commId, tag, length, msgId, payload, completes);
        } catch (IOException e) {
            // a frame may be half written: the byte stream is broken, the connection goes (or is re-established)
            lock.unlock();
            link.lost(e);
            if (lg == null) return UNUSABLE;
            // kept in the resend log, an eager payload as a copy: the send is done
            if (completes != null) completes.succeed(null);
            return SENT;
        } catch (RuntimeException e) {
            lock.unlock();
            if (lg != null && lostMeanwhile(e)) {
                if (completes != null) completes.succeed(null);
                return SENT;
            }
            link.fail(new IOException(e));
            if (completes != null) completes.fail(e);
            return UNUSABLE;
        } finally {
            if (lock.isHeldByCurrentThread()) lock.unlock();
        }
        if (written && completes != null) completes.succeed(null);
        return SENT;
    }

    /**
     * Whether {@code e}, thrown by a write, comes from the conduit being closed under the writer because the connection
     * was lost meanwhile (shared-memory rings unmapped by another thread): the frame is in the resend log, nothing failed.
     */
    private boolean lostMeanwhile(RuntimeException e) {
        return link.reliable && e instanceof IllegalStateException && link.state != PeerLink.State.CONNECTED;
    }

    /** Writes the frame now, or queues it (lock held, CONNECTED); true if it was written whole. */
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
            queueRest(h, payload, off, completes);
            return false;
        }
        ByteBuffer h = ByteBuffer.allocate(Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
        Frame.encode(h, type, flags, seq, ack, commId, tag, rank, length, msgId);
        txQueue.add(new OutFrame(h.flip(), payload, 0, completes));
        return false;
    }

    /** The conduit took only part of a frame: the rest (a copy of the header's rest) waits for OP_WRITE. */
    private void queueRest(ByteBuffer h, MemorySegment payload, long off, SendRequest completes) {
        ByteBuffer rest = ByteBuffer.allocate(h.remaining()).order(ByteOrder.LITTLE_ENDIAN).put(h).flip();
        txQueue.add(new OutFrame(rest, payload, off, completes));
        link.ch.wantWrite();
        progress.wakeup();
    }

    /**
     * Writes header and payload[offset..] until the conduit would block. Native payloads go to the conduit
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
                body = payload.asSlice(offset, Math.min(size - offset, PeerLink.NATIVE_CHUNK)).asByteBuffer();
            }
            long written;
            int headerBefore = header.remaining();
            if (headerBefore > 0 && body != null) {
                gather[0] = header;
                gather[1] = body;
                written = link.ch.write(gather, 0, 2);
                gather[0] = gather[1] = null;
            } else if (headerBefore > 0) {
                written = link.ch.write(header);
            } else if (body != null) {
                written = link.ch.write(body);
            } else {
                return -1;
            }
            if (!heap) offset += Math.max(0, written - headerBefore);
            boolean bodyDone = offset >= size && !(heap && stage.hasRemaining());
            if (!header.hasRemaining() && bodyDone) return -1;
            if (written == 0 || (body != null && body.hasRemaining())) return offset;
        }
    }

    /** A batch of received frames begins: control frames made while it is handled are held ({@link #writeHeld}). */
    void beginBatch() {
        lock.lock();
        holding = true;
        lock.unlock();
    }

    /** Ends a batch of received frames: writes the control frames held back during it. */
    void writeHeld() throws IOException {
        lock.lock();
        try {
            holding = false;
            if (held.position() == 0 || link.state != PeerLink.State.CONNECTED) {
                held.clear();
                return;
            }
            ByteBuffer h = held.flip();
            writeNow(h, null, 0);
            if (h.hasRemaining()) queueRest(h, null, 0, null);
            held.clear();
        } finally {
            lock.unlock();
        }
    }

    /** A batch failed half way: the connection goes, nothing held is written. */
    void dropHeld() {
        lock.lock();
        try {
            holding = false;
            held.clear();
        } finally {
            lock.unlock();
        }
    }

    /** OP_WRITE: drain the queue. */
    void flushQueue() {
        SendRequest completed;
        boolean wrote = false;
        do {
            completed = null;
            lock.lock();
            try {
                if (wrote && lock.hasQueuedThreads()) {
                    // a sender waits for the lock: let it in before the next frame (OP_WRITE brings us back)
                    link.ch.wantWrite();
                    return;
                }
                wrote = true;
                OutFrame f = txQueue.peek();
                if (f == null) {
                    if (fillChunks()) continue;
                    link.ch.writeDone();
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
                lock.unlock();
                link.lost(e);
                return;
            } catch (RuntimeException e) {
                lock.unlock();
                if (!lostMeanwhile(e)) link.fail(new IOException(e));
                return;
            } finally {
                if (lock.isHeldByCurrentThread()) lock.unlock();
            }
            if (completed != null) completed.succeed(null);
        } while (true);
    }

    /**
     * Writes chunks of the peer's large messages ({@link DataPump}) while nothing else waits to be written (lock held):
     * each goes when the one before was taken whole by the conduit; one taken in part waits in the queue like any frame.
     *
     * @return whether it wrote or queued anything
     */
    boolean fillChunks() throws IOException {
        DataPump pump = link.pump;
        DataPump.Lane lane = link.lane;
        boolean any = false;
        while (txQueue.isEmpty() && link.state == PeerLink.State.CONNECTED && !byeSent && !(link.ch instanceof ShmConduit)) {
            if (any && lock.hasQueuedThreads()) {
                // a sender waits for the lock (a small or control message): it goes first, the chunks after
                link.ch.wantWrite();
                return true;
            }
            long seq = txSeq + 1;
            int what = pump.next(lane, seq);
            if (what == DataPump.NONE) return any;
            if (what == DataPump.OTHERS) {
                pump.kickOthers(link);
                return any;
            }
            SendRequest s = lane.nextReq;
            lane.nextReq = null;
            txSeq = seq;
            long ack = link.reader.rxDone();
            any = true;
            if (what == DataPump.DISCARD) {
                if (log != null) log.append(Frame.DATA, Frame.CTS_DISCARD, seq, ack, s.commId, s.tag, rank, 0, s.msgId, null, false, null);
                writeOrQueue(Frame.DATA, Frame.CTS_DISCARD, seq, ack, s.commId, s.tag, 0, s.msgId, null, null);
                continue;
            }
            long off = lane.nextOffset;
            long len = lane.nextLength;
            MemorySegment payload = s.buf.asSlice(off, len);
            if (log != null) log.append(Frame.DATA_PART, 0, seq, ack, off, 0, rank, len, s.msgId, payload, false, null);
            writeOrQueue(Frame.DATA_PART, 0, seq, ack, off, 0, len, s.msgId, payload, null);
        }
        return any;
    }

    /**
     * The peer's pump has chunks: take what fits now if the lock is free (any thread, no tx lock held), else ask the
     * poller to, once the conduit is writable.
     */
    void kick() {
        // this thread is filling this link already (a kick of the others came back here): it goes on by itself
        if (link.state != PeerLink.State.CONNECTED || lock.isHeldByCurrentThread()) return;
        if (!lock.tryLock()) {
            Conduit c = link.ch;
            if (c != null) c.wantWrite();
            progress.wakeup();
            return;
        }
        try {
            if (txQueue.isEmpty()) fillChunks();
        } catch (IOException e) {
            lock.unlock();
            link.lost(e);
        } catch (RuntimeException e) {
            lock.unlock();
            if (!lostMeanwhile(e)) link.fail(new IOException(e));
        } finally {
            if (lock.isHeldByCurrentThread()) lock.unlock();
        }
    }

    /** The peer gave back {@code bytes} of eager credit (poller). */
    void credit(long bytes) throws PeerLink.ProtocolException {
        lock.lock();
        try {
            sendCredit += bytes;
            if (sendCredit > peerLimit) {
                throw new PeerLink.ProtocolException("credit " + sendCredit + " beyond the limit the peer announced ("
                        + peerLimit + ")");
            }
        } finally {
            lock.unlock();
        }
    }

    /** The peer has every frame up to {@code ack}: they leave the resend log; DATA sends waiting for it go to {@code done}. */
    void acknowledge(long ack, List<SendRequest> done) {
        lock.lock();
        try {
            if (log != null) log.acknowledge(ack, done);
        } finally {
            lock.unlock();
        }
    }

    /** See {@link PeerLink#heartbeatIfIdle}. */
    void heartbeatIfIdle() {
        if (link.state != PeerLink.State.CONNECTED || !lock.tryLock()) return;
        boolean idle;
        try {
            idle = txSeq == txSeqAtBeat && txQueue.isEmpty();
            txSeqAtBeat = txSeq;
        } finally {
            lock.unlock();
        }
        if (!idle) return;
        sendFrame(Frame.HEARTBEAT, 0, 0, 0, 0, 0, null, null);
        lock.lock();
        try {
            txSeqAtBeat = txSeq;
        } finally {
            lock.unlock();
        }
    }

    /** Adds the requests of queued frames (and of sends waiting for an acknowledgement) to {@code out} that {@code keep} selects. */
    void queuedRequests(Predicate<SendRequest> keep, List<? super SendRequest> out) {
        lock.lock();
        try {
            for (OutFrame f : txQueue) if (f.completes != null && keep.test(f.completes)) out.add(f.completes);
            if (log != null) log.pending(keep, out);
            if (link.rail == 0) link.pump.pending(keep, out);
        } finally {
            lock.unlock();
        }
    }

    /** Nothing queued, and on a reliable link every frame acknowledged by the peer (close waits for it). */
    boolean delivered() {
        lock.lock();
        try {
            return txQueue.isEmpty() && (log == null || log.frames() == 0) && (link.rail != 0 || link.pump.idle());
        } finally {
            lock.unlock();
        }
    }

    /** Drains queued frames that will never be written, and sends waiting for an acknowledgement. */
    List<SendRequest> drainQueued() {
        List<SendRequest> out = new java.util.ArrayList<>();
        lock.lock();
        try {
            for (OutFrame f : txQueue) if (f.completes != null) out.add(f.completes);
            txQueue.clear();
            if (log != null) log.clear(out);
            if (link.rail == 0) link.pump.drain(out);
        } finally {
            lock.unlock();
        }
        return out;
    }

    /** See {@link PeerLink#canResumeFrom}. */
    boolean canResumeFrom(long peerResume) {
        lock.lock();
        try {
            return log != null && peerResume <= txSeq && peerResume >= log.firstSeq() - 1;
        } finally {
            lock.unlock();
        }
    }

    /**
     * A re-established connection (lock held): the peer has every frame up to {@code peerResume}; the ones after it
     * are queued to go out again, before anything new, with {@code ack} as their acknowledgement. Sends to complete go to
     * {@code done}: those acknowledged by the resume point, and eager ones whose partial write was dropped (their
     * payload is in the log). Sets {@link PeerLink#lastResent} and {@link PeerLink#lastResentBytes}.
     *
     * @param shm whether the new connection is shared memory (only it can carry a one-copy message in flight)
     */
    void requeueAfter(long peerResume, long ack, boolean shm, List<SendRequest> done) throws PeerLink.ProtocolException {
        if (peerResume > txSeq || peerResume < log.firstSeq() - 1) {
            throw new PeerLink.ProtocolException("rank " + link.peer + " resumes after frame " + peerResume
                    + ", but frames " + log.firstSeq() + ".." + txSeq + " are the ones not acknowledged");
        }
        log.acknowledge(peerResume, done);
        link.pump.acked(link.lane, peerResume, done);
        for (OutFrame f : txQueue) if (f.completes != null) done.add(f.completes);
        txQueue.clear();
        held.clear();
        holding = false;
        stage.clear().limit(0);
        long frames = 0, bytes = 0;
        for (long s = peerResume + 1; s <= txSeq; s++) {
            byte type = log.type(s);
            if (!shm && (type == Frame.DATA_REF || type == Frame.DATA_DONE)) {
                throw new PeerLink.ProtocolException("cannot resume: a one-copy message (" + Frame.typeName(type)
                        + ") is in flight and the new connection is not shared memory");
            }
            txQueue.add(new OutFrame(log.header(s, ack), log.payload(s), 0, null));
            frames++;
            bytes += log.wireBytes(s);
        }
        link.lastResent = frames;
        link.lastResentBytes = bytes;
    }

    /** Whether frames wait for the conduit (lock held). */
    boolean queued() {
        return !txQueue.isEmpty();
    }
}
