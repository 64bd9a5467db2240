package io.hcomm4j.transport;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import io.hcomm4j.security.TlsChannel;
import io.hcomm4j.security.Wire;

/** A TCP connection as a {@link Conduit}: registered with the progress engine's selector, readiness from it. */
final class SocketConduit implements Conduit {
    /** {@link #rateMeasured}: time of the link's rate that the socket may hold unsent. */
    static final long UNSENT_NANOS = 1_000_000;
    /** {@link #rateMeasured}: never less than this (a slow link still takes a whole chunk or two at once). */
    static final long UNSENT_MIN = 256 * 1024;
    /** {@link #rateMeasured}: never more than this (the kernel's default send buffer limit). */
    static final long UNSENT_MAX = 4 * 1024 * 1024;

    private final SocketChannel ch;
    /** The TLS session the bytes go through, or {@code null} on a plain connection. */
    private final TlsChannel tls;
    private final PeerLink link;
    private final Progress progress;
    private volatile SelectionKey key;
    /** {@code local -> remote} (diagnostics). */
    final String route;
    /** The local address: which interface the connection went out on. */
    final java.net.InetAddress local;
    /** The socket's descriptor, for {@link TcpOptions} (-1: over loopback, or not found). */
    private final int fd;
    /** The bound on unsent bytes set last (0: the kernel's own); set by the poller. */
    private volatile long unsentLimit;
    /** The congestion control algorithm the socket uses ("": not known, over loopback unless one was chosen). */
    final String congestion;

    SocketConduit(Wire wire, PeerLink link, Progress progress, CongestionControl cc) throws IOException {
        SocketChannel ch = wire.channel();
        wire.endBlockingPhase();
        this.ch = ch;
        this.tls = wire.tls();
        this.link = link;
        this.progress = progress;
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        this.route = address(ch.getLocalAddress()) + " -> " + address(ch.getRemoteAddress());
        this.local = ch.getLocalAddress() instanceof java.net.InetSocketAddress i ? i.getAddress() : null;
        // over loopback the socket drains at memory speed: its queue costs a frame little, and a bound would only add
        // wake-ups of the writer
        boolean loopback = local == null || local.isLoopbackAddress();
        int found = loopback && cc.chosen() == null ? -1 : TcpOptions.descriptor(ch);
        this.fd = loopback ? -1 : found;
        this.congestion = found < 0 ? "" : cc.applyTo(found, route);
    }

    /**
     * The link's rate was measured (poller): the socket holds at most {@link #UNSENT_NANOS} of it unsent, at least
     * {@link #UNSENT_MIN} and at most {@link #UNSENT_MAX} bytes (see {@link TcpOptions}); changed only when the bound
     * moves by a quarter, so a rate that wobbles costs no system calls.
     */
    void rateMeasured(double bytesPerSecond) {
        if (fd < 0 || bytesPerSecond <= 0) return;
        long want = Math.clamp((long) (bytesPerSecond * UNSENT_NANOS / 1e9), UNSENT_MIN, UNSENT_MAX);
        if (Math.abs(want - unsentLimit) * 4 < unsentLimit) return;
        if (ch.isOpen() && TcpOptions.setUnsentLimit(fd, (int) want)) unsentLimit = want;
    }

    /** The bound on unsent bytes in force (0: the kernel's own); tests and diagnostics. */
    long unsentLimit() {
        return unsentLimit;
    }

    private static String address(java.net.SocketAddress a) {
        return a instanceof java.net.InetSocketAddress i ? i.getAddress().getHostAddress() + ":" + i.getPort() : String.valueOf(a);
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        return tls == null ? ch.read(dst) : tls.read(dst);
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        if (tls == null) return ch.write(src);
        int n = tls.write(src);
        if (tls.pending()) stillWriting();
        return n;
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        if (tls == null) return ch.write(srcs, offset, length);
        long n = tls.write(srcs, offset, length);
        if (tls.pending()) stillWriting();
        return n;
    }

    /**
     * TLS took plaintext whose ciphertext the socket could not take yet: the writer may believe its frame gone, so the
     * selector must call again once the socket drains ({@link #writeDone} flushes the rest).
     */
    private void stillWriting() {
        if (key == null) return; // not started: start() asks for writability itself
        wantWrite();
        progress.wakeup();
    }

    @Override
    public void start() throws IOException {
        key = ch.register(progress.selector, SelectionKey.OP_READ | (tls != null && tls.pending() ? SelectionKey.OP_WRITE : 0), link);
    }

    @Override
    public void wantWrite() {
        key.interestOpsOr(SelectionKey.OP_WRITE);
    }

    @Override
    public void writeDone() {
        if (tls != null) {
            try {
                if (!tls.flush()) return; // ciphertext still waits: OP_WRITE stays on and brings us back
            } catch (IOException e) {
                return; // the read side sees the broken connection
            }
        }
        SelectionKey k = key;
        if (k.isValid()) k.interestOpsAnd(~SelectionKey.OP_WRITE);
    }

    /** Test hook: nothing more is read from the socket (a link whose packets no longer arrive, as seen from here). */
    void stopReading() {
        SelectionKey k = key;
        if (k != null && k.isValid()) k.interestOpsAnd(~SelectionKey.OP_READ);
    }

    @Override
    public void abort(Conduit.Drop how) throws IOException {
        abort(ch, how);
    }

    /** Breaks {@code ch} as {@code how} says (see {@link Conduit#abort}). */
    static void abort(SocketChannel ch, Conduit.Drop how) throws IOException {
        switch (how) {
            case RESET -> {
                ch.setOption(StandardSocketOptions.SO_LINGER, 0); // close sends an RST instead of a FIN
                ch.close();
            }
            case CLOSE -> ch.close();
            case SHUTDOWN -> {
                ch.shutdownOutput();
                ch.shutdownInput();
            }
        }
    }

    @Override
    public void close() throws IOException {
        ch.close();
    }

    @Override
    public String kind() {
        return tls == null ? "tcp" : "tls";
    }
}
