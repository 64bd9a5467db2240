package io.hcomm4j.transport;

import io.hcomm4j.ucx.UcpEndpoint;
import io.hcomm4j.ucx.UcpStream;
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
    /** All of memory: UCX's receive buffers are read through it without a segment per read. */
    private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    final PeerLink link;
    private final UcxEngine engine;
    private final SocketChannel socket;
    private final UcpEndpoint ep;
    private final UcpStream stream;
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
}
