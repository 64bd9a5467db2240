package io.hcomm4j.security;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import javax.net.ssl.ExtendedSSLSession;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;

/**
 * One TLS connection over a socket channel, in two phases. First blocking ({@link #handshake}, then {@link #in()} and
 * {@link #out()} for the job-secret handshake and the hellos): records are read one at a time, header then body, so
 * nothing past the last record the setup needs is taken from the socket (a link over shared memory goes on with raw
 * doorbell bytes on the same socket). Then non-blocking, under a transport's conduit: {@link #read} from the thread
 * that reads the link, {@link #write} and {@link #flush} under the link's send lock. The engine serializes its own
 * wrap and unwrap; each direction has its own buffers.
 *
 * <p>Ciphertext waits in {@code netOut} when the socket is full: {@link #write} reports the plaintext it encrypted, so the
 * caller must {@link #flush} until {@link #pending()} is false before it stops asking for writability.
 */
public final class TlsChannel {
    /** Largest TLS record on the wire: 5 header bytes, 2^14 plaintext bytes and 2048 of expansion (TLS 1.2's bound). */
    static final int MAX_RECORD = 5 + (1 << 14) + 2048;
    /** Most plaintext in one TLS record. */
    private static final int MAX_PLAINTEXT = 1 << 14;
    /** Records each way a buffer holds: one system call moves up to this many. */
    private static final int RECORDS = 8;
    /** The label of the keying material the job-secret handshake binds itself to (RFC 8446, section 7.5). */
    private static final String EXPORTER_LABEL = "EXPORTER-hcomm4j-job-secret";
    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);

    private final SocketChannel ch;
    private final SSLEngine engine;
    private final int packetSize;
    private final int appSize;
    /** Read mode: ciphertext received and not unwrapped yet. */
    private final ByteBuffer netIn;
    /** Read mode: plaintext unwrapped and not read yet. */
    private final ByteBuffer appIn;
    /** Write mode: {@code [0, position)} is ciphertext not written yet. */
    private final ByteBuffer netOut;
    /** Write mode: plaintext taken from the caller's (native) buffers, not encrypted into {@link #netOut} yet. */
    private final ByteBuffer appOut;
    /** Blocking phase: a record on its way from the socket stream. */
    private byte[] recordBuf;
    /** The reading side unwrapped a message the engine must answer (a key update) while no write was under way. */
    private volatile boolean answerWanted;
    private boolean inputClosed;
    /** Whether a record ever came from the peer. */
    private boolean heard;

    /** The peer closed the connection before it sent a single byte of TLS (it refuses connections, or is not TLS). */
    static final class ClosedBeforeReply extends EOFException {
        private static final long serialVersionUID = 1L;

        ClosedBeforeReply() {
            super("the peer closed the connection before its first TLS record (does it run without HCOMM_TLS, "
                    + "or refuse connections from this address now?)");
        }
    }

    private TlsChannel(SocketChannel ch, SSLEngine engine) {
        this.ch = ch;
        this.engine = engine;
        SSLSession s = engine.getSession();
        this.packetSize = Math.max(s.getPacketBufferSize(), MAX_RECORD);
        this.appSize = Math.max(s.getApplicationBufferSize(), 1 << 14);
        // heap buffers: the JDK's AES-GCM and ChaCha20 run on arrays, several times faster than from direct buffers
        // (16 KiB records, one thread: AES-256-GCM 5.1 GB/s heap to heap, 1.6-2.0 with a direct side); the copies
        // into and out of them cost far less than that difference
        this.netIn = ByteBuffer.allocate(packetSize * RECORDS).flip();
        this.appIn = ByteBuffer.allocate(appSize).flip();
        this.netOut = ByteBuffer.allocate(packetSize * RECORDS);
        this.appOut = ByteBuffer.allocate(4 * MAX_PLAINTEXT); // several records at once: few short ones
    }

    /**
     * Runs the TLS handshake on a blocking channel (each read waits at most until {@code deadline}, System.nanoTime).
     *
     * @throws SSLException the peer's certificate is not trusted, it presented none, or it does not speak TLS 1.3
     * @throws IOException  I/O failure or timeout
     */
    static TlsChannel handshake(SocketChannel ch, SSLEngine engine, long deadline) throws IOException {
        TlsChannel t = new TlsChannel(ch, engine);
        try {
            t.engine.beginHandshake();
            while (true) {
                switch (t.engine.getHandshakeStatus()) {
                    case NEED_WRAP -> t.writeBlocking(EMPTY);
                    case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> t.unwrapBlocking(deadline);
                    case NEED_TASK -> t.runTasks();
                    case FINISHED, NOT_HANDSHAKING -> {
                        return t;
                    }
                }
            }
        } catch (SSLException e) {
            t.sendAlert();
            throw e;
        }
    }

    /** The handshake failed: tell the peer why (the engine holds the alert), so it reports more than a closed socket. */
    private void sendAlert() {
        try {
            engine.closeOutbound();
            netOut.clear();
            for (int i = 0; i < 4 && !engine.isOutboundDone(); i++) {
                SSLEngineResult r = engine.wrap(EMPTY, netOut);
                if (r.bytesProduced() == 0) break;
            }
            netOut.flip();
            while (netOut.hasRemaining()) ch.write(netOut);
        } catch (IOException | RuntimeException ignored) {
            // best effort: the connection closes anyway
        } finally {
            netOut.clear();
        }
    }

    /** Keying material exported from this session (32 bytes): binds a handshake run inside the channel to it. */
    byte[] binding() throws SSLException {
        return ((ExtendedSSLSession) engine.getSession()).exportKeyingMaterialData(EXPORTER_LABEL, null, 32);
    }

    // ---- blocking phase

    /** Plaintext from the peer, blocking (reads wait as long as the socket's SO_TIMEOUT allows). */
    InputStream in() {
        return new InputStream() {
            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xFF;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (len == 0) return 0;
                while (!appIn.hasRemaining()) {
                    if (inputClosed) return -1;
                    unwrapBlocking(Long.MAX_VALUE);
                }
                int n = Math.min(len, appIn.remaining());
                appIn.get(b, off, n);
                return n;
            }
        };
    }

    /** Plaintext to the peer, blocking; each write leaves in full before it returns. */
    OutputStream out() {
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                writeBlocking(ByteBuffer.wrap(b, off, len));
            }
        };
    }

    /** Encrypts all of {@code src} and writes it (blocking channel). */
    void writeBlocking(ByteBuffer src) throws IOException {
        do {
            SSLEngineResult r = engine.wrap(src, netOut);
            if (r.getStatus() == SSLEngineResult.Status.CLOSED) throw new EOFException("TLS connection closed");
            if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) runTasks();
            netOut.flip();
            while (netOut.hasRemaining()) ch.write(netOut);
            netOut.clear();
        } while (src.hasRemaining());
    }

    /** Unwraps the next record, reading it whole from the socket first if needed (blocking). */
    private void unwrapBlocking(long deadline) throws IOException {
        if (!netIn.hasRemaining() && !readRecord(deadline)) {
            endOfInput();
            return;
        }
        SSLEngineResult r = unwrapOne();
        switch (r.getStatus()) {
            case OK -> {
                if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) runTasks();
            }
            case BUFFER_UNDERFLOW -> {
                if (!readRecord(deadline)) throw new EOFException("connection closed in the middle of a TLS record");
            }
            case BUFFER_OVERFLOW -> throw new IOException("TLS record larger than the plaintext buffer (" + appSize + " bytes)");
            case CLOSED -> {
                inputClosed = true;
                if (engine.isInboundDone() && engine.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING) {
                    throw new EOFException("the peer closed the TLS connection during its handshake");
                }
            }
        }
    }

    /** The peer closed the socket between records: the end of the stream, unless the handshake is not done. */
    private void endOfInput() throws EOFException {
        inputClosed = true;
        if (!heard) throw new ClosedBeforeReply();
        if (engine.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING) {
            throw new EOFException("the peer closed the connection during the TLS handshake (does it run without HCOMM_TLS, "
                    + "or with a certificate this side does not trust?)");
        }
    }

    /** Unwraps from {@code netIn} after what {@code appIn} still holds (read mode before and after). */
    private SSLEngineResult unwrapOne() throws SSLException {
        appIn.compact();
        try {
            return engine.unwrap(netIn, appIn);
        } finally {
            appIn.flip();
        }
    }

    /**
     * Appends exactly one record to {@code netIn}: the 5-byte header, then as many bytes as it announces, never more, so
     * the socket keeps whatever follows. A header that is not TLS fails at once (nothing it says decides a read).
     * False if the socket ended before the record's first byte.
     */
    private boolean readRecord(long deadline) throws IOException {
        if (recordBuf == null) recordBuf = new byte[MAX_RECORD];
        InputStream s = ch.socket().getInputStream();
        if (deadline != Long.MAX_VALUE) {
            long left = deadline - System.nanoTime();
            if (left <= 0) throw new IOException("TLS handshake timed out");
            ch.socket().setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
        }
        int first;
        try {
            first = s.read(recordBuf, 0, 5);
        } catch (java.net.SocketTimeoutException e) {
            throw new IOException("TLS connection timed out while waiting for a record", e);
        }
        if (first < 0) return false;
        heard = true;
        readFully(s, recordBuf, first, 5 - first);
        int type = recordBuf[0] & 0xFF;
        int length = ((recordBuf[3] & 0xFF) << 8) | (recordBuf[4] & 0xFF);
        if (type < 20 || type > 24 || recordBuf[1] != 3 || length > MAX_RECORD - 5) {
            String start = new String(recordBuf, 0, 4, StandardCharsets.ISO_8859_1);
            throw new SSLException("the peer does not speak TLS" + ("HCMA".equals(start)
                    ? " (it sent the plain HComm4J handshake: it runs without HCOMM_TLS)" : ""));
        }
        readFully(s, recordBuf, 5, length);
        netIn.compact();
        netIn.put(recordBuf, 0, 5 + length);
        netIn.flip();
        return true;
    }

    private static void readFully(InputStream s, byte[] b, int off, int n) throws IOException {
        while (n > 0) {
            int r;
            try {
                r = s.read(b, off, n);
            } catch (java.net.SocketTimeoutException e) {
                throw new IOException("TLS connection timed out while reading a record", e);
            }
            if (r < 0) throw new EOFException("connection closed in the middle of a TLS record");
            off += r;
            n -= r;
        }
    }

    private void runTasks() {
        Runnable task;
        while ((task = engine.getDelegatedTask()) != null) task.run();
    }

    /** The blocking phase is over: the channel goes non-blocking under a conduit. */
    void endBlockingPhase() {
        recordBuf = null;
    }

    // ---- non-blocking phase

    /**
     * Reads plaintext into {@code dst}: what was unwrapped before, else what the socket has now. Returns 0 when nothing is
     * there and -1 at the end of the stream, as a non-blocking channel does. Only the link's reading thread calls it.
     */
    public int read(ByteBuffer dst) throws IOException {
        while (true) {
            if (appIn.hasRemaining()) return putSome(appIn, dst);
            if (netIn.hasRemaining()) {
                int produced = unwrapInto(dst);
                if (produced > 0) return produced;
                if (produced < 0) return -1;
            }
            netIn.compact();
            int n;
            try {
                n = ch.read(netIn);
            } finally {
                netIn.flip();
            }
            if (n < 0) return -1;
            if (n == 0) return 0;
        }
    }

    /**
     * Unwraps the next record {@code netIn} holds into {@code appIn} and copies what fits into {@code dst}. Returns the
     * bytes put into {@code dst} (0: nothing yet, a partial record or a record without application data; -1: the peer
     * closed the TLS connection).
     */
    private int unwrapInto(ByteBuffer dst) throws IOException {
        while (netIn.hasRemaining()) {
            SSLEngineResult r = unwrapOne();
            switch (r.getStatus()) {
                case OK -> afterUnwrap(r);
                case BUFFER_UNDERFLOW -> {
                    return 0;
                }
                case BUFFER_OVERFLOW -> throw new IOException("TLS record larger than the plaintext buffer (" + appSize + " bytes)");
                case CLOSED -> {
                    return -1;
                }
            }
            if (appIn.hasRemaining()) return putSome(appIn, dst);
            if (r.bytesConsumed() == 0) return 0;
        }
        return 0;
    }

    private void afterUnwrap(SSLEngineResult r) {
        switch (r.getHandshakeStatus()) {
            case NEED_TASK -> runTasks();
            // a key update to answer: the next flush wraps the answer (writes happen under the send lock only)
            case NEED_WRAP -> answerWanted = true;
            default -> { }
        }
    }

    /**
     * Takes what fits of {@code srcs[offset..offset+length)}, encrypts it and writes what the socket takes; returns the
     * plaintext bytes taken (some may still wait, as plaintext or ciphertext: {@link #pending()}). Under the link's send
     * lock.
     */
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        if (!flush()) return 0;
        long taken = 0;
        int i = offset;
        int end = offset + length;
        while (true) {
            while (i < end && !srcs[i].hasRemaining()) i++;
            if (i == end) break;
            for (int k = i; k < end && appOut.hasRemaining(); k++) taken += putSome(srcs[k], appOut);
            if (!seal()) break;
        }
        flush();
        return taken;
    }

    /** As {@link #write(ByteBuffer[], int, int)} for one buffer. */
    public int write(ByteBuffer src) throws IOException {
        if (!flush()) return 0;
        int taken = 0;
        while (src.hasRemaining()) {
            taken += putSome(src, appOut);
            if (!seal()) break;
        }
        flush();
        return taken;
    }

    /** Copies what fits of {@code from} into {@code to}; returns how much. */
    private static int putSome(ByteBuffer from, ByteBuffer to) {
        int n = Math.min(from.remaining(), to.remaining());
        if (n == 0) return 0;
        int lim = from.limit();
        from.limit(from.position() + n);
        to.put(from);
        from.limit(lim);
        return n;
    }

    /**
     * Encrypts the plaintext {@code appOut} holds into {@code netOut} while a whole record fits there; true if all of it
     * went (false: {@code netOut} is full, the rest waits in {@code appOut}).
     */
    private boolean seal() throws IOException {
        appOut.flip();
        try {
            while (appOut.hasRemaining() && netOut.remaining() >= packetSize) {
                SSLEngineResult r = engine.wrap(appOut, netOut);
                if (r.getStatus() == SSLEngineResult.Status.CLOSED) throw new EOFException("TLS connection closed");
                if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) runTasks();
                if (r.getStatus() != SSLEngineResult.Status.OK) break;
                // (a message the engine owed, a key update, goes first and takes no plaintext: the loop wraps again)
            }
            return !appOut.hasRemaining();
        } finally {
            appOut.compact();
        }
    }

    /**
     * Encrypts what plaintext waits and writes what ciphertext waits (and an answer the engine owes the peer); true once
     * nothing is pending. Send lock held.
     */
    public boolean flush() throws IOException {
        if (answerWanted) {
            answerWanted = false;
            if (engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP) engine.wrap(EMPTY, netOut);
        }
        while (true) {
            seal();
            if (netOut.position() == 0) return appOut.position() == 0;
            netOut.flip();
            int n;
            try {
                n = ch.write(netOut);
            } finally {
                netOut.compact();
            }
            if (netOut.position() > 0 || n == 0) return false; // the socket is full: OP_WRITE brings us back
            if (appOut.position() == 0) return true;
        }
    }

    /** Ciphertext waits for the socket (or an answer for the engine): writing must go on. */
    public boolean pending() {
        return netOut.position() > 0 || appOut.position() > 0 || answerWanted;
    }
}
