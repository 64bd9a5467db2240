package io.hcomm4j.transport;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The read side of one {@link PeerLink}: frames in, only on the thread holding the progress token. Small frames are
 * read through a 128 KiB buffer, so one read brings a header and its payload; a large payload is read straight into
 * its destination. Each header is checked ({@link #onHeader}) before the transport acts on it; the acknowledgements
 * this side owes (the last frame received completely) and the eager credit it gives back are decided here. An RMA
 * frame's payload goes straight into the segment its {@link RmaHandler} gives (through {@link LinkHost#rmaTarget}).
 *
 * <p>Over shared memory, small eager messages may come by the pair's slots ({@link ShmSlots}) instead of the ring: before
 * each frame of the ring the reader takes the next slot if its stamp is the next seq ({@link #takeSlot}).
 *
 * <p>On a reliable link a frame that comes a second time is read and dropped, and a payload cut off with a lost
 * connection is read again whole, into the same place, when its frame comes first on the new one.
 */
final class FrameReader {
    private static final int RX_CAPACITY = 128 * 1024;
    /** A payload of at least this much, with nothing else buffered, is read straight into its destination. */
    private static final int DIRECT_READ_MIN = RX_CAPACITY / 4;
    private static final int ACK_EVERY = 128;
    /** Reliable links: an ACK once this many eager payload bytes arrived since the last one (bounds the peer's resend log). */
    private static final long ACK_BYTES = 1L << 20;
    private static final VarHandle RX_BYTES;
    private static final VarHandle RX_DONE;

    static {
        try {
            var lookup = MethodHandles.lookup();
            RX_BYTES = lookup.findVarHandle(FrameReader.class, "rxBytes", long.class);
            RX_DONE = lookup.findVarHandle(FrameReader.class, "rxDone", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final org.slf4j.Logger LOG = PeerTransport.LOG;

    private final PeerLink link;
    private final FrameWriter writer;
    private final LinkHost host;
    private final int peer;
    private final int rank;
    private final int size;
    private final long unexpectedLimit;

    /** The receive buffer, allocated when the link first connects ({@link #allocate}): an idle link costs no buffer. */
    private ByteBuffer rx;
    private MemorySegment rxSeg;
    /** Bytes read from the peer so far: the watchdog's sign of life (written by the poller, read opaquely). */
    private long rxBytes;
    /** The highest message id of an RTS from the peer (primary link): a DATA_PART naming one up to it may come late. */
    long maxRtsMsgId;
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
    /** The last frame the peer said it received completely. */
    private volatile long peerAcked;
    private boolean inPayload;
    private MemorySegment dest;
    private long destOff;
    private long remaining;
    private RecvRequest payloadRecv;
    private byte[] payloadUnexpected;
    private long payloadCommId;
    private int payloadTag;
    private int payloadFlags;
    /** An RMA frame's target offset, and whether its payload goes to the handler (false: it is read and dropped). */
    private long payloadOffset;
    private boolean rmaApply;
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
    /** The receive side was rolled back to the last complete frame since the connection was lost. */
    private boolean rxDetached;
    /** Sends completed by an acknowledgement (poller only; completed outside the tx lock). */
    private final ArrayList<SendRequest> completedByAck = new ArrayList<>();
    /** Eager bytes (with overhead) received and not yet credited back (poller adds, consumers subtract). */
    private final AtomicLong eagerHeld = new AtomicLong();
    /** Eager bytes handed to receives (or dropped) and not yet credited back. */
    private final AtomicLong consumedUnreturned = new AtomicLong();

    // test hook: drop the connection abruptly once this many bytes were read, see PeerTransport#dropAfter
    private volatile long dropAtRx = Long.MAX_VALUE;
    private volatile Conduit.Drop dropHow = Conduit.Drop.RESET;

    FrameReader(PeerLink link, FrameWriter writer, LinkHost host) {
        this.link = link;
        this.writer = writer;
        this.host = host;
        this.peer = link.peer;
        this.rank = host.rank();
        this.size = host.worldSize();
        this.unexpectedLimit = host.unexpectedLimit();
    }

    /**
     * Allocates the receive buffer if this link has none yet (its first connection is being installed, under the link's
     * monitor, before the conduit is read): a transport with many slots that never connect (transfer engines) pays
     * for the connections it has only.
     */
    void allocate() {
        if (rx != null) return;
        rx = ByteBuffer.allocateDirect(RX_CAPACITY).order(ByteOrder.LITTLE_ENDIAN);
        rxSeg = MemorySegment.ofBuffer(rx);
    }

    /** Seq of the last frame received completely (any thread). */
    long rxDone() {
        return (long) RX_DONE.getAcquire(this);
    }

    private void setRxDone(long seq) {
        RX_DONE.setRelease(this, seq);
    }

    /** Bytes read from the peer so far (any thread; no ordering with anything else). */
    long rxProgress() {
        return (long) RX_BYTES.getOpaque(this);
    }

    /** Test hook: once {@code bytes} more were read, the connection is broken as {@code how} says. */
    void dropAfter(long bytes, Conduit.Drop how) {
        dropHow = how;
        dropAtRx = rxProgress() + bytes;
    }

    /** Disarms a {@link #dropAfter} not triggered yet. */
    void disarmDrop() {
        dropAtRx = Long.MAX_VALUE;
    }

    /** See {@link PeerLink#consumed}. */
    void consumed(long cost) {
        long pending = consumedUnreturned.addAndGet(cost);
        if (pending >= unexpectedLimit / 4) {
            long n = consumedUnreturned.getAndSet(0);
            if (n > 0) {
                eagerHeld.addAndGet(-n);
                writer.sendFrame(Frame.CREDIT, 0, 0, 0, n, 0, null, null);
            }
        }
    }

    /** Reads what the conduit has, and acts on every frame it completes, while the link is connected. */
    void read() throws IOException {
        ShmSlots slots = link.ch instanceof ShmConduit sc ? sc.rxSlots() : null;
        while (link.state == PeerLink.State.CONNECTED) {
            if (slots != null && !inPayload && takeSlot(slots)) continue;
            if (inPayload && rx.position() == 0 && dest != null && dest.isNative() && remaining >= DIRECT_READ_MIN) {
                long chunk = Math.min(remaining, PeerLink.NATIVE_CHUNK);
                int n = link.ch.read(dest.asSlice(destOff, chunk).asByteBuffer());
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
            if (!inPayload && rx.position() < Frame.HEADER && !link.owner.awaitingData.isEmpty()) rx.limit(Frame.HEADER);
            Conduit c = link.ch;
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
            if (hold) writer.beginBatch();
            boolean handled = false;
            try {
                consumeBuffered(slots);
                handled = true;
            } finally {
                rx.compact();
                if (!handled && hold) writer.dropHeld();
            }
            if (hold) writer.writeHeld();
        }
    }

    /** Test hook (poller): drops the connection abruptly, as if it broke right after this read. */
    private void dropByHook() throws IOException {
        dropAtRx = Long.MAX_VALUE;
        Conduit.Drop how = dropHow;
        link.ch.abort(how);
        throw new IOException("connection dropped by a test hook (" + how + ") after " + rxBytes + " bytes");
    }

    private IOException eof() {
        return new EOFException(link.peerSaidBye ? "rank " + peer + " closed its session" : "connection closed by rank " + peer);
    }

    private void consumeBuffered(ShmSlots slots) throws IOException {
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
                if (slots != null && takeSlot(slots)) continue;
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

    /**
     * The short road of shared memory: takes the message in the peer's next slot if it is the next frame in seq order
     * (true); a slot whose frames of the ring come first waits for them. The message is matched like an EAGER frame and
     * its payload copied straight from the slot to where the match says.
     */
    private boolean takeSlot(ShmSlots slots) throws IOException {
        long stamp = slots.peek();
        if (stamp == 0) return false;
        if (stamp != rxSeq + 1) {
            if (stamp <= rxSeq) throw protocol("slot frame seq " + stamp + " after " + rxSeq);
            return false;
        }
        long commId = slots.commId();
        int tag = slots.tag();
        int flags = slots.flags();
        int length = slots.length();
        if (length < 0 || length > ShmSlots.PAYLOAD_MAX) throw protocol("slot message of " + length + " bytes");
        rxBytes += ShmSlots.SLOT;
        if (rxBytes >= dropAtRx) dropByHook();
        holdEager(length);
        rxSeq = stamp;
        hdrType = Frame.EAGER;
        hdrSeq = stamp;
        host.onEager(link, commId, tag, length, flags); // sets up the payload (a length of 0 is finished already)
        boolean payload = inPayload;
        if (payload) {
            if (dest != null) slots.copyPayload(dest, destOff, length);
            remaining = 0;
        }
        slots.release(stamp);
        if (payload) finishPayload();
        return true;
    }

    /** An eager message of {@code length} bytes is held against the credit this side gave (beyond it: a protocol error). */
    private void holdEager(long length) throws PeerLink.ProtocolException {
        long heldNow = eagerHeld.addAndGet(length + Frame.EAGER_OVERHEAD);
        if (heldNow > unexpectedLimit) {
            throw protocol("eager bytes " + heldNow + " beyond the credit given (limit " + unexpectedLimit + ")");
        }
    }

    /** Checks and acts on the header at {@code p} (the buffer position is already past it). */
    private void onHeader(int p) throws PeerLink.ProtocolException {
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
        if (magic != Frame.MAGIC) throw protocol("bad magic 0x" + Integer.toHexString(magic & 0xffff));
        if (version != Frame.VERSION) throw protocol("unsupported frame version " + version);
        if (src != peer) throw protocol("frame claims source rank " + src);
        if (length < 0) throw protocol("negative length " + length);
        if (seq != rxSeq + 1) {
            if (link.reliable && seq > 0 && seq <= rxSeq) {
                dropDuplicate(type, seq, length);
                return;
            }
            throw protocol("frame seq " + seq + " after " + rxSeq);
        }
        if (ack > peerAcked) {
            peerAcked = ack;
            if (link.reliable) acknowledged(ack);
            if (link.lane.count > 0) chunksAcknowledged(ack);
        }
        if (link.rail != 0 && type != Frame.DATA_PART && type != Frame.ACK && type != Frame.HEARTBEAT && type != Frame.BYE
                && type != Frame.DATA && type != Frame.ECHO) {
            throw protocol(Frame.typeName(type) + " frame on rail " + link.rail + " (only chunks go there)");
        }
        hdrType = type;
        hdrSeq = seq;
        if (partialSeq != 0) {
            // the first frame on a new connection is the one we had read in part: its payload is read again, whole
            if (seq != partialSeq || type != payloadType || length != payloadLength) {
                throw protocol("frame " + seq + " (" + Frame.typeName(type) + ", " + length + " bytes) instead of frame "
                        + partialSeq + " (" + Frame.typeName(payloadType) + ", " + payloadLength + " bytes) that was cut off");
            }
            rxSeq = seq;
            restartPartial();
            return;
        }
        switch (type) {
            case Frame.EAGER -> {
                if (length > PeerTransport.MAX_EAGER) throw protocol("eager frame of " + length + " bytes");
                holdEager(length);
                rxSeq = seq;
                host.onEager(link, commId, tag, length, flags);
                return;
            }
            case Frame.RTS -> {
                if (msgId > maxRtsMsgId) maxRtsMsgId = msgId;
                host.onRts(link, commId, tag, length, msgId, flags);
            }
            case Frame.CTS -> onCts(msgId, flags);
            case Frame.DATA -> onData(msgId, commId, tag, length, flags);
            case Frame.DATA_PART -> {
                rxSeq = seq;
                onDataPart(msgId, commId, length);
                return;
            }
            case Frame.DATA_REF -> host.onDataRef(link, msgId, commId, ((long) tag << 32) | (flags & 0xFFFFFFFFL), length);
            case Frame.DATA_DONE -> host.onDataDone(link, msgId, flags);
            case Frame.ACK, Frame.HEARTBEAT -> { }
            case Frame.BYE -> {
                link.peerSaidBye = true;
                ackSoon = link.reliable; // the closing peer waits for everything it sent to be acknowledged
            }
            case Frame.FAILED -> {
                if (tag < 0 || tag >= size) throw protocol("FAILED notice for rank " + tag);
                rxSeq = seq;
                host.onFailedNotice(link, tag, flags);
                return;
            }
            case Frame.ABORT -> {
                rxSeq = seq;
                host.onAbortNotice(link, commId);
                return;
            }
            case Frame.STATUS_REQUEST -> {
                rxSeq = seq;
                host.onStatusRequest(link);
                return;
            }
            case Frame.CREDIT -> writer.credit(length);
            case Frame.RMA -> {
                if (length > PeerTransport.MAX_RMA_PAYLOAD) throw protocol("RMA frame of " + length + " bytes");
                rxSeq = seq;
                onRma(flags, commId, tag, msgId, length);
                return;
            }
            case Frame.ECHO -> {
                if ((flags & Frame.ECHO_REPLY) != 0) {
                    if (length != 0) throw protocol("ECHO reply with " + length + " bytes");
                    link.echoed(msgId);
                } else {
                    if (length > Frame.ECHO_MAX) throw protocol("ECHO of " + length + " bytes");
                    rxSeq = seq;
                    expectPayload(null, length, null, null, msgId, 0, flags); // the padding is dropped; answered at its end
                    return;
                }
            }
            default -> throw protocol("unknown frame type " + type);
        }
        rxSeq = seq;
    }

    private static PeerLink.ProtocolException protocol(String message) {
        return new PeerLink.ProtocolException(message);
    }

    /** The receiver of our RTS {@code msgId} is ready: the data goes now (or it was refused, or we gave up on it). */
    private void onCts(long msgId, int flags) throws PeerLink.ProtocolException {
        SendRequest s = link.awaitingCts.remove(msgId);
        if (s == null) throw protocol("CTS for unknown message " + msgId);
        if ((flags & Frame.CTS_DISCARD) != 0 || s.isDone()) {
            // the receiver refused it, or we gave up on it: no data follows, the receiver is told
            if (s.isDone()) writer.sendFrame(Frame.DATA, Frame.CTS_DISCARD, s.commId, s.tag, 0, msgId, null, null);
            else s.succeed(null);
        } else if ((flags & Frame.CTS_UCX) != 0) {
            if (!(link.ch instanceof UcxConduit c)) throw protocol("CTS for a UCX transfer over " + link.ch.kind());
            c.sendTagged(s, msgId);
        } else {
            host.sendData(link, s, msgId);
        }
    }

    /** The data of a rendezvous message we gave a CTS for: its payload goes into the matched receive's buffer. */
    private void onData(long msgId, long commId, int tag, long length, int flags) throws PeerLink.ProtocolException {
        RecvRequest r = link.owner.awaitingData.remove(msgId);
        if (r == null && (flags & Frame.CTS_DISCARD) != 0 && length == 0 && msgId > 0 && msgId <= link.owner.reader.maxRtsMsgId) {
            return; // a chunked message given up twice (its chunks were queued, and some had to go again)
        }
        if (r == null) throw protocol("DATA for unknown message " + msgId);
        if ((flags & Frame.CTS_DISCARD) != 0) {
            if (length != 0) throw protocol("cancelled DATA with " + length + " bytes");
            r.fail(new SenderGaveUpException("rank " + rank + ": " + r.describe()
                    + ": the sender (rank " + peer + ") gave up on the message"));
        } else {
            if (length != r.matchedSize) throw protocol("DATA of " + length + " bytes for a message of " + r.matchedSize);
            // a receive that failed meanwhile (its communicator aborted, a peer failed) no longer owns its buffer
            if (r.finished()) expectPayload(null, length, null, null, commId, tag, 0);
            else expectPayload(r.buf, length, r, null, commId, tag, 0);
        }
    }

    /**
     * One chunk of a rendezvous message we gave a CTS for, at byte {@code offset} of it: read straight into its place in
     * the receive buffer. A chunk of a message no longer waited for (it failed or was given up, or this chunk came
     * already: sent again after a link failed) is read and dropped.
     */
    private void onDataPart(long msgId, long offset, long length) throws PeerLink.ProtocolException {
        PeerLink owner = link.owner;
        RecvRequest r = owner.awaitingData.get(msgId);
        if (r == null) {
            if (msgId <= 0 || msgId > owner.reader.maxRtsMsgId) throw protocol("DATA_PART for unknown message " + msgId);
            expectPayload(null, length, null, null, 0, 0, 0); // the message ended meanwhile
            return;
        }
        long size = r.matchedSize;
        if (offset < 0 || offset >= size || offset % Frame.CHUNK != 0 || length <= 0 || length > size - offset
                || (length % Frame.CHUNK != 0 && length != size - offset)) {
            throw protocol("DATA_PART [" + offset + ", +" + length + ") of a message of " + size + " bytes");
        }
        if (r.chunkCame(offset / Frame.CHUNK)) {
            expectPayload(null, length, null, null, 0, 0, 0);
            return;
        }
        // a receive that failed meanwhile no longer owns its buffer: its chunks are dropped, but counted, so that it
        // leaves the map with the last one
        expectPayload(r.finished() ? null : r.buf, length, r, null, msgId, 0, 0);
        destOff = offset;
        payloadOffset = offset;
    }

    /**
     * An RMA frame: its payload goes straight into the segment the handler gives (no copy of ours, nothing allocated),
     * then the handler gets the frame ({@link #finishPayload}; at once without payload). No segment: read and dropped.
     */
    private void onRma(int flags, long windowId, int opId, long offset, long length) {
        MemorySegment target = length == 0 ? null : host.rmaTarget(link, flags, windowId, opId, offset, length);
        rmaApply = length == 0 || target != null;
        payloadOffset = offset;
        expectPayload(target, length, null, null, windowId, opId, flags);
    }

    /** See {@link PeerLink#expectPayload}. */
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
        MemorySegment landed = dest;
        dest = null;
        payloadRecv = null;
        payloadUnexpected = null;
        if (dupPayload) {
            dupPayload = false;
            return;
        }
        setRxDone(payloadSeq);
        if (payloadType == Frame.DATA_PART) {
            finishChunk(r);
            return;
        }
        if (payloadType == Frame.ECHO) {
            writer.sendFrame(Frame.ECHO, Frame.ECHO_REPLY, 0, 0, 0, payloadCommId, null, null);
            return;
        }
        // reliable: a DATA send (a large RMA one) completes when acknowledged, so say so at once; copies are bounded by bytes
        if (++rxSinceAck >= ACK_EVERY || (link.reliable && (payloadType == Frame.DATA
                || (payloadType == Frame.RMA && payloadLength > Frame.RMA_COPY_MAX)
                || (rxPayloadSinceAck += payloadLength) >= ACK_BYTES))) {
            sendAck();
        }
        if (r != null) {
            if (!r.isDone()) r.succeedMatched();
        } else if (u != null) {
            host.onUnexpectedComplete(link, payloadCommId, payloadTag, u, payloadFlags);
        } else if (payloadType == Frame.RMA && rmaApply) {
            host.onRma(link, payloadFlags, payloadCommId, payloadTag, payloadOffset, landed);
        }
    }

    /**
     * A chunk of {@code r} (null: dropped) is in: acknowledged at once (its sender counts on it); the last one completes
     * the receive.
     */
    private void finishChunk(RecvRequest r) {
        sendAck();
        if (r != null) r.linksUsed |= 1 << link.rail;
        if (r != null && r.chunkDone(payloadOffset / Frame.CHUNK, payloadLength)) {
            link.owner.awaitingData.remove(payloadCommId);
            if (!r.isDone()) r.succeedMatched();
        }
    }

    /** Our chunks up to frame {@code ack} were acknowledged: sends whose last chunk that was complete. */
    private void chunksAcknowledged(long ack) {
        ArrayList<SendRequest> done = completedByAck;
        DataPump pump = link.pump;
        boolean wasFull = pump.acked(link.lane, ack, done);
        if (link.ch instanceof SocketConduit sc) sc.rateMeasured(link.lane.bytesPerSecond());
        for (int i = 0; i < done.size(); i++) done.get(i).succeed(null);
        done.clear();
        // this link has room again: whichever link now delivers the next chunk soonest takes it
        if (wasFull || pump.pending()) pump.kick();
    }

    private void sendAck() {
        ackSoon = false;
        rxSinceAck = 0;
        rxPayloadSinceAck = 0;
        writer.sendFrame(Frame.ACK, 0, 0, 0, 0, 0, null, null);
    }

    /** The peer has every frame up to {@code ack}: they leave the resend log, DATA sends waiting for it complete. */
    private void acknowledged(long ack) {
        ArrayList<SendRequest> done = completedByAck;
        writer.acknowledge(ack, done);
        if (done.isEmpty()) return;
        for (int i = 0; i < done.size(); i++) done.get(i).succeed(null);
        done.clear();
    }

    /** A frame received before came again (reliable links; not expected: a new connection resumes right after the last one). */
    private void dropDuplicate(byte type, long seq, long length) {
        host.countDuplicate();
        LOG.warn("rank {}: frame {} ({}) from rank {} came a second time (last received {}); dropped", rank, seq,
                Frame.typeName(type), peer, rxSeq);
        if (type == Frame.EAGER || type == Frame.DATA || type == Frame.RMA || type == Frame.DATA_PART
                || (type == Frame.ECHO && length > 0)) {
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
        destOff = payloadType == Frame.DATA_PART ? payloadOffset : 0;
        remaining = payloadLength;
    }

    /** See {@link PeerLink#detachRx}. */
    void detach() {
        // connected again meanwhile (the peer's attempt was taken here): the live stream must not be touched
        if (rxDetached || link.state == PeerLink.State.CONNECTED) return;
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

    /** A new connection was installed after {@link #detach}: the next loss rolls back again. */
    void reattached() {
        rxDetached = false;
    }

    /** The peer said at resume that it has every frame up to {@code peerResume}. */
    void peerResumedAfter(long peerResume) {
        if (peerResume > peerAcked) peerAcked = peerResume;
    }

    /** The receive whose payload is being read, or null. */
    RecvRequest payloadRecv() {
        return payloadRecv;
    }
}
