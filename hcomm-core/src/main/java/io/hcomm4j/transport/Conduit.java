package io.hcomm4j.transport;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The ordered, reliable byte pipe under a {@link PeerLink}: a TCP socket ({@link SocketConduit}) or a pair of
 * shared-memory rings ({@link ShmConduit}). Non-blocking like a socket channel in non-blocking mode: {@code read}
 * returns 0 when nothing is there and -1 at the end of the stream, {@code write} takes what fits (maybe nothing).
 * Reads come only from the thread holding the progress token; writes only under the link's {@code txLock}.
 */
interface Conduit {
    /** Reads up to {@code dst.remaining()} bytes; 0 if none are there, -1 once the peer is gone and everything was read. */
    int read(ByteBuffer dst) throws IOException;

    /** Writes what fits of {@code src}; returns the bytes taken. */
    int write(ByteBuffer src) throws IOException;

    /** Writes what fits of {@code srcs[offset..offset+length)}, in order; returns the bytes taken. */
    long write(ByteBuffer[] srcs, int offset, int length) throws IOException;

    /** Begins readiness reporting to the progress engine (the link is connected now). */
    void start() throws IOException;

    /** Frames wait in the link's queue: have the progress engine call {@code onReady(writable)} once writing can go on. */
    void wantWrite();

    /** The link's queue is empty again. */
    void writeDone();

    /**
     * Test hook: breaks the connection abruptly, without a BYE, as a network fault would ({@code RESET}: an RST to the
     * peer; {@code CLOSE}: a plain close, the peer reads the end of the stream; {@code SHUTDOWN}: both directions shut
     * down, the socket stays open). For shared memory this is done to the pair's doorbell socket.
     */
    void abort(Conduit.Drop how) throws IOException;

    /** Closes the pipe; later reads and writes fail. Idempotent. */
    void close() throws IOException;

    /** {@code "tcp"}, {@code "tls"} (TCP under TLS) or {@code "shm"}: what carries the bytes (diagnostics, tests). */
    String kind();

    /**
     * How a test breaks a connection ({@link PeerTransport#drop}, {@link PeerTransport#dropAfter}): {@code RESET} closes with an RST (SO_LINGER 0),
     * {@code CLOSE} closes (the peer reads the end of the stream without a BYE, as when a process dies), {@code SHUTDOWN}
     * shuts both directions down.
     */
    enum Drop { RESET, CLOSE, SHUTDOWN }
}
