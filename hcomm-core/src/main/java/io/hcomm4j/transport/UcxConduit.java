package io.hcomm4j.transport;

import io.hcomm4j.HcommException;
import io.hcomm4j.ucx.UcpEndpoint;
import io.hcomm4j.ucx.UcpStream;
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
 * Two ranks over UCX ({@code HCOMM_TRANSPORT=ucx}): the link's frames travel as one ordered byte stream of a UCP
 * endpoint pair (UCP's stream API, over whatever UCX chose: InfiniBand or RoCE verbs, shared memory, CMA, TCP); the
 * pair's TCP connection, which carried the hello and the worker addresses, stays open as the death detector, as for
 * shared memory ({@link Doorbelled}): UCX 1.13's shared-memory transports cannot report a dead peer.
 *
 * <p><b>Sending.</b> A socket takes bytes and lets the caller reuse its buffer at once; a UCX send may read its buffer
 * until its request completes. So what a write takes is copied into this side's staging ring and sent from there;
 * ring space comes back as sends complete, in order. A full ring takes nothing, and the link waits for room as for a
 * full socket ({@link #wantWrite}: the progress engine reports room once sends completed).
 *
 * <p><b>Receiving.</b> The reader copies straight from UCX's receive buffers ({@code ucp_stream_recv_data_nb}) and
 * hands each back once consumed.
 *
 * <p><b>Large messages.</b> A rendezvous message whose receive buffer is native memory takes another road: the
 * receiver posts a UCX tag receive straight into that buffer (tag: the sender's rank and the message id) before its
 * CTS, flagged {@link Frame#CTS_UCX}; the sender answers with a UCX tag send straight from its buffer (a heap array is
 * copied to native memory first). UCX moves the bytes by its own rendezvous (RDMA where the fabric has it, zero copy
 * through TCP or CMA here), and each side completes its request when UCX's does. A receive that fails meanwhile (a
 * timeout, an abort, the sender gave up) has its UCX receive cancelled at the poller's next pass; until then UCX may
 * still write into the buffer.
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
    /** Bits of a tag below the sender's rank: the message id. */
    private static final int TAG_RANK_SHIFT = 40;
    /** All of memory: UCX's receive buffers are read through it without a segment per read. */
    private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    final PeerLink link;
    private final UcxEngine engine;
    private final SocketChannel socket;
    private final UcpEndpoint ep;
    private final UcpStream stream;
    private final UcpTags tags;
    /** Large messages in flight through UCX's tag matching (guarded by itself; completed by the poller). */
    private final java.util.ArrayList<Tagged> tagged = new java.util.ArrayList<>();
    private volatile int taggedCount;
    /** Those {@link #pollTagged} found complete (poller only, reused). */
    private final java.util.ArrayList<Tagged> taggedDone = new java.util.ArrayList<>();
    private final Arena arena = Arena.ofShared();
    private final MemorySegment staging;
    private final ByteBuffer stagingBuf;
    private final long stagingAddress;
    private final ByteBuffer drain = ByteBuffer.allocateDirect(64);
    // tx, under txState: bytes staged so far, bytes whose sends completed, the sends in flight (oldest first; 0 = done)
    private final Object txState = new Object();
    private long staged;
    private long freed;
    private final long[] inFlight = new long[MAX_IN_FLIGHT];
    private final long[] inFlightEnd = new long[MAX_IN_FLIGHT];
    private int flightHead;
    private int flightCount;
    private IOException txFailure;
    // rx, poller only: UCX's buffer being consumed
    private long rxData;
    private long rxLength;
    private long rxPos;
    private IOException rxFailure;
    private volatile boolean writeWanted;
    private volatile boolean eof;
    private volatile long eofAt;
    /** Writes fail from now on (under txState). */
    private boolean closing;
    /** Polling stops: the endpoint is about to be closed by the poller. */
    private volatile boolean closed;

    private UcxConduit(PeerLink link, UcxEngine engine, SocketChannel socket, UcpEndpoint ep) throws IOException {
        this.link = link;
        this.engine = engine;
        this.socket = socket;
        this.ep = ep;
        this.stream = ep.stream();
        this.tags = engine.worker.tags();
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
            ep = engine.worker.connect(peerAddress, true);
        } catch (UcxException withErrors) {
            try {
                ep = engine.worker.connect(peerAddress, false);
            } catch (UcxException e) {
                throw new IOException("rank " + link.rank + ": UCX cannot reach rank " + link.peer + ": " + e.getMessage(), e);
            }
        }
        try {
            return new UcxConduit(link, engine, wire.channel(), ep);
        } catch (IOException | RuntimeException e) {
            ep.close();
            throw e;
        }
    }

    // ------------------------------------------------------------------------------------------- Conduit

    @Override
    public int read(ByteBuffer dst) throws IOException {
        if (closed) return -1;
        if (rxFailure != null) throw rxFailure;
        if (!dst.hasRemaining()) return 0;
        if (rxData == 0 && !take()) {
            if (rxFailure != null) throw rxFailure;
            return eof && graceOver() ? -1 : 0;
        }
        int n = (int) Math.min(dst.remaining(), rxLength - rxPos);
        MemorySegment.copy(ALL, rxData + rxPos, MemorySegment.ofBuffer(dst), 0, n);
        dst.position(dst.position() + n);
        rxPos += n;
        if (rxPos == rxLength) {
            long d = rxData;
            rxData = 0;
            try {
                stream.release(d);
            } catch (UcxException e) {
                throw rxFailure = new IOException("rank " + link.rank + ": UCX stream from rank " + link.peer + ": " + e.getMessage(), e);
            }
        }
        return n;
    }

    /** Takes UCX's next received bytes if there are any (poller only). */
    private boolean take() {
        if (closed) return false;
        long d;
        try {
            d = stream.receive();
        } catch (UcxException e) {
            rxFailure = new IOException("rank " + link.rank + ": UCX stream from rank " + link.peer + ": " + e.getMessage(), e);
            return false;
        }
        if (d == 0) return false;
        rxData = d;
        rxLength = stream.receivedLength();
        rxPos = 0;
        return true;
    }

    private boolean graceOver() {
        return System.nanoTime() - eofAt > EOF_GRACE_NANOS;
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        synchronized (txState) {
            reap();
            long before = staged;
            stage(src);
            sendStaged(before);
            return (int) (staged - before);
        }
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        synchronized (txState) {
            reap();
            long before = staged;
            for (int i = offset; i < offset + length; i++) {
                stage(srcs[i]);
                if (srcs[i].hasRemaining()) break;
            }
            sendStaged(before);
            return staged - before;
        }
    }

    /** Copies what fits of {@code src} into the staging ring (under txState). */
    private void stage(ByteBuffer src) {
        while (src.hasRemaining() && flightCount < MAX_IN_FLIGHT - 1) {
            long room = STAGING_BYTES - (staged - freed);
            if (room == 0) return;
            int at = (int) (staged % STAGING_BYTES);
            int n = (int) Math.min(Math.min(src.remaining(), room), STAGING_BYTES - at);
            stagingBuf.put(at, src, src.position(), n);
            src.position(src.position() + n);
            staged += n;
        }
    }

    /** Sends the staged bytes from {@code from} on, in one send or two where they wrap (under txState). */
    private void sendStaged(long from) throws IOException {
        if (txFailure != null) throw txFailure;
        if (closing) throw new IOException("rank " + link.rank + ": the UCX link to rank " + link.peer + " is closed");
        while (from < staged) {
            int at = (int) (from % STAGING_BYTES);
            long n = Math.min(staged - from, STAGING_BYTES - at);
            long request;
            try {
                request = stream.send(stagingAddress + at, n);
            } catch (UcxException e) {
                throw txFailure = new IOException("rank " + link.rank + ": UCX stream to rank " + link.peer + ": " + e.getMessage(), e);
            }
            from += n;
            if (request == 0 && flightCount == 0) {
                freed = from;
            } else {
                int slot = (flightHead + flightCount) % MAX_IN_FLIGHT;
                inFlight[slot] = request;
                inFlightEnd[slot] = from;
                flightCount++;
            }
        }
    }

    /** Frees the ring space of the oldest sends that completed (under txState). */
    private void reap() throws IOException {
        while (flightCount > 0) {
            long request = inFlight[flightHead];
            try {
                if (request != 0 && !stream.completed(request)) return;
            } catch (UcxException e) {
                inFlight[flightHead] = 0;
                throw txFailure = new IOException("rank " + link.rank + ": UCX stream to rank " + link.peer + ": " + e.getMessage(), e);
            }
            freed = inFlightEnd[flightHead];
            inFlight[flightHead] = 0;
            flightHead = (flightHead + 1) % MAX_IN_FLIGHT;
            flightCount--;
        }
    }

    @Override
    public void start() throws IOException {
        socket.register(engine.selector, SelectionKey.OP_READ, this);
        engine.add(this);
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

    /** A large message in flight through UCX's tag matching: a receive ({@code r}) or a send ({@code s}, {@code copy}). */
    private static final class Tagged {
        final long msgId;
        final long request;
        final RecvRequest r;
        final SendRequest s;
        /** A heap array's bytes copied to native memory for UCX, freed when the send completes. */
        final Arena copy;
        boolean cancelled;
        int status;

        Tagged(long msgId, long request, RecvRequest r, SendRequest s, Arena copy) {
            this.msgId = msgId;
            this.request = request;
            this.r = r;
            this.s = s;
            this.copy = copy;
        }
    }

    private static long tagOf(int senderRank, long msgId) {
        return ((long) senderRank << TAG_RANK_SHIFT) | (msgId & ((1L << TAG_RANK_SHIFT) - 1));
    }

    /** Whether a rendezvous receive into {@code buf} goes through UCX's tag matching (see the class comment). */
    boolean takesTagged(java.lang.foreign.MemorySegment buf) {
        return !closing && buf.isNative();
    }

    /**
     * Posts the UCX receive of the peer's message {@code msgId} ({@code size} bytes) straight into {@code r}'s buffer,
     * before its CTS goes; false if UCX refused (then the bytes come as chunks on the stream).
     */
    boolean receiveTagged(RecvRequest r, long msgId, long size) {
        synchronized (tagged) {
            if (closing) return false;
            long request;
            try {
                request = tags.receive(r.buf.address(), size, tagOf(link.peer, msgId));
            } catch (UcxException e) {
                return false;
            }
            tagged.add(new Tagged(msgId, request, r, null, null));
            taggedCount = tagged.size();
        }
        engine.taggedReceives.incrementAndGet();
        return true;
    }

    /** The receiver of our message {@code msgId} posted a UCX receive for it (CTS_UCX): its bytes go by UCX's tag send. */
    void sendTagged(SendRequest s, long msgId) {
        MemorySegment src = s.buf;
        Arena copy = null;
        if (!src.isNative()) {
            copy = Arena.ofShared();
            MemorySegment n = copy.allocate(Math.max(1, s.size), 64);
            MemorySegment.copy(src, 0, n, 0, s.size);
            src = n;
        }
        link.awaitingDone.put(msgId, s);
        synchronized (tagged) {
            long request = -1;
            if (!closing) {
                try {
                    request = tags.send(ep, src.address(), s.size, tagOf(link.rank, msgId));
                } catch (UcxException e) {
                    request = -1;
                }
            }
            if (request != -1) {
                tagged.add(new Tagged(msgId, request, null, s, copy));
                taggedCount = tagged.size();
                engine.taggedSends.incrementAndGet();
                return;
            }
        }
        if (copy != null) copy.close();
        if (link.awaitingDone.remove(msgId) != null) {
            s.fail(new HcommException("rank " + link.rank + ": " + s.describe() + ": UCX refused the send to rank " + link.peer));
        }
    }

    /** Completes the large messages UCX finished (poller); cancels the receives of failed ops. Returns how many ended. */
    int pollTagged() {
        if (taggedCount == 0) return 0;
        synchronized (tagged) {
            for (int i = 0; i < tagged.size(); i++) {
                Tagged t = tagged.get(i);
                int st = t.request == 0 ? 0 : tags.status(t.request);
                if (st == 1) { // UCS_INPROGRESS
                    if (t.r != null && !t.cancelled && t.r.finished()) {
                        t.cancelled = true; // the op failed: UCX must stop writing into its buffer
                        tags.cancel(t.request);
                    }
                    continue;
                }
                if (t.request != 0) tags.free(t.request);
                t.status = st;
                taggedDone.add(t);
                tagged.remove(i--);
            }
            taggedCount = tagged.size();
        }
        int n = taggedDone.size();
        for (int i = 0; i < n; i++) complete(taggedDone.get(i));
        taggedDone.clear();
        return n;
    }

    private void complete(Tagged t) {
        if (t.r != null) {
            RecvRequest r = link.awaitingData.remove(t.msgId);
            if (r == null || r.finished()) return; // failed meanwhile (the link, the op): nobody waits for these bytes
            if (t.status == 0) r.succeedMatched();
            else r.fail(new HcommException("rank " + link.rank + ": " + r.describe() + ": UCX failed to receive it from rank "
                    + link.peer + ": " + tags.statusText(t.status)));
        } else {
            if (t.copy != null) t.copy.close();
            SendRequest s = link.awaitingDone.remove(t.msgId);
            if (s == null || s.isDone()) return;
            if (t.status == 0) s.succeed(null);
            else s.fail(new HcommException("rank " + link.rank + ": " + s.describe() + ": UCX failed to send it to rank "
                    + link.peer + ": " + tags.statusText(t.status)));
        }
    }

    // -------------------------------------------------------------------------------------- progress hooks

    /** Spin poll (poller): bytes to read, the end to report, or room for queued frames. */
    boolean ready() {
        if (closed) return false;
        if (rxData != 0 || rxFailure != null || take() || rxFailure != null) return true;
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
        try {
            int n;
            do {
                drain.clear();
                n = socket.read(drain);
            } while (n > 0);
            if (n < 0) markEof();
        } catch (IOException e) {
            markEof(); // reset: the peer died
        }
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
        finishTagged();
        synchronized (txState) {
            for (int i = 0; i < flightCount; i++) {
                long r = inFlight[(flightHead + i) % MAX_IN_FLIGHT];
                if (r != 0) stream.abandon(r);
            }
            flightCount = 0;
        }
        try {
            if (rxData != 0) stream.release(rxData);
            rxData = 0;
            ep.close();
        } catch (UcxException e) {
            // closed anyway
        }
        arena.close();
    }

    /**
     * The link is gone: UCX must stop reading and writing the buffers of the large messages still in flight (their ops
     * were failed with the link). Receives are cancelled and sends end with the endpoint's forced close; each request is
     * freed once UCX completed it (bounded: one that does not complete is freed anyway).
     */
    private void finishTagged() {
        synchronized (tagged) {
            closing = true;
            if (tagged.isEmpty()) return;
            for (Tagged t : tagged) {
                if (t.request != 0 && t.r != null && !t.cancelled) {
                    t.cancelled = true;
                    tags.cancel(t.request);
                }
            }
        }
        try {
            ep.close();
        } catch (UcxException e) {
            // closed anyway
        }
        long deadline = System.nanoTime() + 1_000_000_000L;
        synchronized (tagged) {
            for (Tagged t : tagged) {
                while (t.request != 0 && tags.status(t.request) == 1 && System.nanoTime() - deadline < 0) engine.worker.progress();
                if (t.request != 0) tags.free(t.request);
                if (t.copy != null) t.copy.close();
            }
            tagged.clear();
            taggedCount = 0;
        }
    }
}
