package io.hcomm4j.transport;

import io.hcomm4j.ucx.UcpEndpoint;
import io.hcomm4j.ucx.UcpTags;
import io.hcomm4j.ucx.UcxException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * Two ranks over UCX ({@code HCOMM_TRANSPORT=ucx}): the link's frames travel as an ordered byte stream cut into UCX
 * tag messages of at most {@link #SLOT_BYTES} (over whatever UCX chose: InfiniBand or RoCE verbs, shared memory, CMA,
 * TCP); the
 * pair's TCP connection, which carried the hello and the worker addresses, stays open as the death detector, as for
 * shared memory ({@link Doorbelled}): UCX 1.13's shared-memory transports cannot report a dead peer.
 *
 * <p><b>Sending.</b> A socket takes bytes and lets the caller reuse its buffer at once; a UCX send may read its buffer
 * until its request completes. So what a write takes is copied into this side's staging ring and sent from there;
 * ring space comes back as sends complete, in order. A full ring takes nothing, and the link waits for room as for a
 * full socket ({@link #wantWrite}: the progress engine reports room once sends completed).
 *
 * <p><b>Receiving.</b> {@link #SLOTS} receives for the peer's frame tag are posted into this side's slots; UCX matches
 * one sender's messages of one tag in the order they were sent, so slot after slot holds the stream in order. The reader
 * copies out of the oldest slot and posts its receive again once it is consumed. (UCP's own stream API carried the
 * frames first: 1.5 µs more one way for 8 B than tag messages, as ucx_perftest's stream_lat and tag_lat show.)
 *
 * <p><b>Large messages.</b> A rendezvous message whose receive buffer is native memory goes by UCX's tag matching
 * straight between the two buffers instead ({@link UcxLargeMessages}).
 *
 * <p><b>The end.</b> The end of the socket's stream is the peer's end; bytes it streamed just before may still be on
 * their way through UCX (another connection), so the end is reported once no UCX bytes came for {@link #EOF_GRACE_NANOS}.
 * A peer that closes in order flushes its endpoint before it closes the socket.
 */
final class UcxConduit implements Conduit, Doorbelled {
    /** Bytes of the staging ring a link sends from. */
    static final int STAGING_BYTES = 4 << 20;
    /** Sends in flight at most (beyond it a write takes nothing until the oldest completes). */
    private static final int MAX_IN_FLIGHT = 256;
    /** Spin polls report room for a waiting writer only from this much on, so a stream is copied in large pieces. */
    private static final int ROOM_MIN = STAGING_BYTES / 8;
    static final long EOF_GRACE_NANOS = 200_000_000L;
    /** How long a close waits for what was sent to leave. */
    private static final long CLOSE_FLUSH_NANOS = 2_000_000_000L;
    /**
     * Bytes of one frame message at most, and of each receive slot: an eager message of the default limit (64 KiB) with
     * its header, in one UCX message. Cut at 64 KiB, such a frame left as two messages, and the second one cost its
     * ping-pong 5 us more (17 against 12.4 us at 64 KiB over UCX's TCP; 10 at 48 KiB).
     */
    static final int SLOT_BYTES = (64 << 10) + 1024;
    /** Receives posted for the peer's frames. */
    static final int SLOTS = 16;
    /** The tag bit of frame messages (large messages' tags have it clear: rank and message id). */
    private static final long FRAME_TAG = 1L << 63;
    /** All of memory: UCX's receive buffers are read through it without a segment per read. */
    private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    final PeerLink link;
    private final UcxEngine engine;
    private final SocketChannel socket;
    private final UcpEndpoint ep;
    private final UcpTags tags;
    /** Large messages through UCX's tag matching. */
    private final UcxLargeMessages large;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment staging;
    private final ByteBuffer stagingBuf;
    private final long stagingAddress;
    private final ByteBuffer drain = ByteBuffer.allocateDirect(64);
    /** {@link #write(ByteBuffer)}'s one buffer as an array (under txState). */
    private final ByteBuffer[] one = new ByteBuffer[1];
    // tx, under txState: bytes staged so far, bytes whose sends completed, the sends in flight (oldest first; 0 = done)
    private final Object txState = new Object();
    private long staged;
    private long freed;
    private final long[] inFlight = new long[MAX_IN_FLIGHT];
    private final long[] inFlightEnd = new long[MAX_IN_FLIGHT];
    private int flightHead;
    private int flightCount;
    private IOException txFailure;
    // rx, poller only: the slots, their receives (0: completed), which slot is read, how much of it is there and read
    private final MemorySegment rxSlots;
    private final long rxSlotsAddress;
    private final MemorySegment[] rxParams = new MemorySegment[SLOTS];
    private final MemorySegment[] rxInfo = new MemorySegment[SLOTS];
    /** Each slot's receive: the request, 0 when it completed, {@link #NOT_POSTED} before {@link #start}, -1 refused. */
    private final long[] rxRequest = new long[SLOTS];
    private static final long NOT_POSTED = -2;
    private int rxHead;
    private boolean rxHeadReady;
    private long rxLength;
    private long rxPos;
    private IOException rxFailure;
    private final long frameTagIn;
    private final long frameTagOut;
    private volatile boolean writeWanted;
    private volatile boolean eof;
    private volatile long eofAt;
    /** Writes fail from now on (under txState). */
    private boolean closing;
    /** Polling stops: the endpoint is about to be closed by the poller. */
    private volatile boolean closed;
    /** {@link #start} ran: the engine counts this conduit among its links (else among its pending endpoints). */
    private volatile boolean started;

    private UcxConduit(PeerLink link, UcxEngine engine, SocketChannel socket, UcpEndpoint ep) throws IOException {
        this.link = link;
        this.engine = engine;
        this.socket = socket;
        this.ep = ep;
        this.tags = engine.worker.tags();
        this.large = new UcxLargeMessages(link, engine, ep);
        this.frameTagIn = FRAME_TAG | link.peer;
        this.frameTagOut = FRAME_TAG | link.rank;
        this.rxSlots = arena.allocate((long) SLOTS * SLOT_BYTES, 64);
        this.rxSlotsAddress = rxSlots.address();
        java.util.Arrays.fill(rxRequest, NOT_POSTED);
        for (int i = 0; i < SLOTS; i++) {
            rxInfo[i] = arena.allocate(16, 8);
            rxParams[i] = UcpTags.receiveParams(arena, rxInfo[i]);
        }
        this.staging = arena.allocate(STAGING_BYTES, 64);
        this.stagingBuf = staging.asByteBuffer();
        this.stagingAddress = staging.address();
        socket.configureBlocking(false);
        socket.setOption(StandardSocketOptions.TCP_NODELAY, true);
    }

    /**
     * The conduit to {@code link.peer}, whose worker address came in the hello: an endpoint with UCX's peer error
     * handling where the transports allow it (TCP, verbs), without where they do not (shared memory), the socket kept.
     */
    static UcxConduit of(PeerLink link, UcxEngine engine, io.hcomm4j.security.Wire wire, byte[] peerAddress) throws IOException {
        wire.endBlockingPhase();
        UcpEndpoint ep;
        try {
            ep = engine.connect(peerAddress);
        } catch (UcxException e) {
            throw new IOException("rank " + link.rank + ": UCX cannot reach rank " + link.peer + ": " + e.getMessage(), e);
        }
        if (ep == null) throw new IOException("rank " + link.rank + ": the transport is closing (no UCX link to rank " + link.peer + ")");
        try {
            return new UcxConduit(link, engine, wire.channel(), ep);
        } catch (IOException | RuntimeException e) {
            ep.close();
            engine.abandoned();
            throw e;
        }
    }

    /** The pair's endpoint (one-sided ops use it too: {@link UcxRemoteAccess}). */
    UcpEndpoint endpoint() {
        return ep;
    }

    // ------------------------------------------------------------------------------------------- Conduit

    @Override
    public int read(ByteBuffer dst) throws IOException {
        if (closed) return -1;
        if (rxFailure != null) throw rxFailure;
        if (!dst.hasRemaining()) return 0;
        if (!rxHeadReady && !take()) {
            if (rxFailure != null) throw rxFailure;
            int failed = ep.failure();
            if (failed != 0) {
                // UCX's own report (TCP, verbs: an endpoint with peer error handling): no grace, nothing more comes
                throw rxFailure = new java.io.EOFException("rank " + link.rank + ": UCX reports rank " + link.peer + " unreachable: "
                        + tags.statusText(failed));
            }
            return eof && graceOver() ? -1 : 0;
        }
        int n = (int) Math.min(dst.remaining(), rxLength - rxPos);
        MemorySegment.copy(rxSlots, (long) rxHead * SLOT_BYTES + rxPos, MemorySegment.ofBuffer(dst), 0, n);
        dst.position(dst.position() + n);
        rxPos += n;
        if (rxPos == rxLength) {
            rxHeadReady = false;
            post(rxHead);
            rxHead = (rxHead + 1) % SLOTS;
        }
        return n;
    }

    /** Posts the receive of slot {@code i} (poller, or start). */
    private void post(int i) {
        try {
            long request = tags.receive(rxSlotsAddress + (long) i * SLOT_BYTES, SLOT_BYTES, frameTagIn, rxParams[i]);
            rxRequest[i] = request; // never 0: the parameters deny completion at once, so the length comes by testReceive
        } catch (UcxException e) {
            rxFailure = new IOException("rank " + link.rank + ": UCX receive from rank " + link.peer + ": " + e.getMessage(), e);
            rxRequest[i] = -1;
        }
    }

    /** Whether the oldest slot's message came (poller only): then it is read from {@link #rxPos}. */
    private boolean take() {
        if (closed || rxFailure != null) return false;
        int i = rxHead;
        long request = rxRequest[i];
        if (request == -1 || request == NOT_POSTED) return false;
        if (request != 0) {
            int st;
            try {
                st = tags.testReceive(request, rxInfo[i]);
                if (st == 1) return false; // UCS_INPROGRESS
                tags.free(request);
            } catch (UcxException e) {
                st = -1;
            }
            rxRequest[i] = 0;
            if (st != 0) {
                rxFailure = new IOException("rank " + link.rank + ": UCX receive from rank " + link.peer + " failed: "
                        + tags.statusText(st));
                return false;
            }
        }
        rxLength = rxInfo[i].get(java.lang.foreign.ValueLayout.JAVA_LONG, 8);
        rxPos = 0;
        rxHeadReady = true;
        if (rxLength == 0) { // no frame message is empty; skip it rather than hand the reader nothing
            rxHeadReady = false;
            post(i);
            rxHead = (i + 1) % SLOTS;
            return take();
        }
        return true;
    }

    private boolean graceOver() {
        return System.nanoTime() - eofAt > EOF_GRACE_NANOS;
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        synchronized (txState) {
            one[0] = src;
            try {
                return (int) write(one, 0, 1);
            } finally {
                one[0] = null;
            }
        }
    }

    /**
     * Copies what fits of {@code srcs} into the staging ring and sends it, one message per {@link #SLOT_BYTES} at most
     * (a frame's header and payload, given together, leave as one message), while sends may be added in flight.
     */
    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        synchronized (txState) {
            if (txFailure != null) throw txFailure;
            if (closing) throw new IOException("rank " + link.rank + ": the UCX link to rank " + link.peer + " is closed");
            reap();
            long taken = 0;
            int i = offset;
            int end = offset + length;
            while (i < end && flightCount < MAX_IN_FLIGHT) {
                long room = STAGING_BYTES - (staged - freed);
                if (room == 0) break;
                int at = (int) (staged % STAGING_BYTES);
                long max = Math.min(Math.min(room, STAGING_BYTES - at), SLOT_BYTES);
                int n = 0;
                while (i < end && n < max) {
                    ByteBuffer src = srcs[i];
                    int k = (int) Math.min(src.remaining(), max - n);
                    stagingBuf.put(at + n, src, src.position(), k);
                    src.position(src.position() + k);
                    n += k;
                    if (!src.hasRemaining()) i++;
                }
                if (n == 0) break;
                send(staged, n);
                staged += n;
                taken += n;
            }
            return taken;
        }
    }

    /** Sends the {@code n} staged bytes from {@code from} as one message (under txState). */
    private void send(long from, int n) throws IOException {
        long request;
        try {
            request = tags.send(ep, stagingAddress + from % STAGING_BYTES, n, frameTagOut);
        } catch (UcxException e) {
            throw txFailure = new IOException("rank " + link.rank + ": UCX send to rank " + link.peer + ": " + e.getMessage(), e);
        }
        if (request == 0 && flightCount == 0) {
            freed = from + n;
        } else {
            int slot = (flightHead + flightCount) % MAX_IN_FLIGHT;
            inFlight[slot] = request;
            inFlightEnd[slot] = from + n;
            flightCount++;
        }
    }

    /** Frees the ring space of the oldest sends that completed (under txState). */
    private void reap() throws IOException {
        while (flightCount > 0) {
            long request = inFlight[flightHead];
            try {
                if (request != 0) {
                    int st = tags.status(request);
                    if (st == 1) return; // UCS_INPROGRESS
                    tags.free(request);
                    if (st != 0) {
                        inFlight[flightHead] = 0;
                        throw txFailure = new IOException("rank " + link.rank + ": UCX send to rank " + link.peer + " failed: "
                                + tags.statusText(st));
                    }
                }
            } catch (UcxException e) {
                inFlight[flightHead] = 0;
                throw txFailure = new IOException("rank " + link.rank + ": UCX send to rank " + link.peer + ": " + e.getMessage(), e);
            }
            freed = inFlightEnd[flightHead];
            inFlight[flightHead] = 0;
            flightHead = (flightHead + 1) % MAX_IN_FLIGHT;
            flightCount--;
        }
    }

    @Override
    public void start() throws IOException {
        for (int i = 0; i < SLOTS; i++) post(i);
        socket.register(engine.selector, SelectionKey.OP_READ, this);
        engine.add(this);
        started = true;
    }

    @Override
    public void wantWrite() {
        writeWanted = true;
    }

    @Override
    public void writeDone() {
        writeWanted = false;
    }

    @Override
    public String kind() {
        return "ucx";
    }

    @Override
    public void abort(Conduit.Drop how) throws IOException {
        SocketConduit.abort(socket, how);
    }

    // -------------------------------------------------------------------------------------- large messages

    /** Whether a rendezvous receive into {@code buf} goes through UCX's tag matching ({@link UcxLargeMessages}). */
    boolean takesTagged(MemorySegment buf) {
        return !closing && large.takes(buf);
    }

    /** See {@link UcxLargeMessages#receive}. */
    boolean receiveTagged(RecvRequest r, long msgId, long size) {
        return large.receive(r, msgId, size);
    }

    /** See {@link UcxLargeMessages#send}. */
    void sendTagged(SendRequest s, long msgId) {
        large.send(s, msgId);
    }

    /** See {@link UcxLargeMessages#poll}. */
    int pollTagged() {
        return large.poll();
    }

    // -------------------------------------------------------------------------------------- progress hooks

    /** Spin poll (poller): bytes to read, the end to report, or room for queued frames. */
    boolean ready() {
        if (closed) return false;
        if (rxHeadReady || rxFailure != null || take() || rxFailure != null || ep.failure() != 0) return true;
        if (eof) return graceOver();
        if (!writeWanted) return false;
        synchronized (txState) {
            try {
                reap();
            } catch (IOException e) {
                return true; // the writer finds the failure
            }
            return STAGING_BYTES - (staged - freed) >= ROOM_MIN || flightCount == 0;
        }
    }

    boolean writeWanted() {
        return writeWanted;
    }

    @Override
    public void onDoorbell() {
        if (Doorbelled.drainedToEnd(socket, drain)) markEof();
        link.onReady(writeWanted, true);
    }

    private void markEof() {
        if (eof) return;
        eofAt = System.nanoTime();
        eof = true;
    }

    // ------------------------------------------------------------------------------------------- closing

    /**
     * Stops writes and the polling, lets what was sent leave (bounded; not after the peer's end) and closes the socket.
     * The endpoint is closed and the staging ring freed by the poller ({@link #finish}): the reader may be inside a
     * UCX call on the endpoint right now. Idempotent.
     */
    @Override
    public void close() {
        synchronized (txState) {
            if (closing) return;
            closing = true;
        }
        if (!started) engine.abandoned(); // never added: the engine's close need not wait for it
        try {
            if (!eof) {
                long deadline = System.nanoTime() + CLOSE_FLUSH_NANOS;
                synchronized (txState) {
                    while (flightCount > 0 && System.nanoTime() - deadline < 0) {
                        try {
                            reap();
                        } catch (IOException e) {
                            break;
                        }
                        if (flightCount > 0 && engine.worker.progress() == 0) Thread.onSpinWait();
                    }
                }
                if (txFailure == null) ep.flush(Math.max(0, deadline - System.nanoTime()));
            }
        } catch (UcxException e) {
            // the peer is gone: nothing more to deliver
        }
        closed = true;
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        engine.retire(this);
    }

    /** Closes the endpoint and frees the staging ring (the engine's poller, or the engine's close: nobody reads now). */
    void finish() {
        large.cancelAll();
        synchronized (txState) {
            for (int i = 0; i < flightCount; i++) {
                long r = inFlight[(flightHead + i) % MAX_IN_FLIGHT];
                if (r != 0) tags.free(r);
            }
            flightCount = 0;
        }
        try {
            ep.close();
        } catch (UcxException e) {
            // closed anyway
        }
        if (finishSlots()) {
            arena.close();
        } else {
            // a receive UCX did not give back may still write into the slots: they stay allocated
            PeerTransport.LOG.warn("rank {}: UCX did not cancel the receives from rank {} within 1 s; their {} KiB stay allocated",
                    link.rank, link.peer, (long) SLOTS * SLOT_BYTES / 1024);
        }
    }

    /** Cancels the slots' receives and frees them once UCX completed them; false if one did not complete within 1 s. */
    private boolean finishSlots() {
        for (int i = 0; i < SLOTS; i++) {
            if (rxRequest[i] != 0 && rxRequest[i] != -1 && rxRequest[i] != NOT_POSTED) tags.cancel(rxRequest[i]);
        }
        long deadline = System.nanoTime() + 1_000_000_000L;
        boolean all = true;
        for (int i = 0; i < SLOTS; i++) {
            long r = rxRequest[i];
            if (r == 0 || r == -1 || r == NOT_POSTED) continue;
            while (tags.status(r) == 1 && System.nanoTime() - deadline < 0) engine.worker.progress();
            if (tags.status(r) == 1) all = false;
            tags.free(r);
            rxRequest[i] = 0;
        }
        return all;
    }
}
