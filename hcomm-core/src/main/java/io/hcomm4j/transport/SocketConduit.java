package io.hcomm4j.transport;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/** A TCP connection as a {@link Conduit}: registered with the progress engine's selector, readiness from it. */
final class SocketConduit implements Conduit {
    private final SocketChannel ch;
    private final PeerLink link;
    private final Progress progress;
    private volatile SelectionKey key;
    /** {@code local -> remote} (diagnostics). */
    final String route;
    /** The local address: which interface the connection went out on. */
    final java.net.InetAddress local;

    SocketConduit(SocketChannel ch, PeerLink link, Progress progress) throws IOException {
        this.ch = ch;
        this.link = link;
        this.progress = progress;
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        this.route = address(ch.getLocalAddress()) + " -> " + address(ch.getRemoteAddress());
        this.local = ch.getLocalAddress() instanceof java.net.InetSocketAddress i ? i.getAddress() : null;
    }

    private static String address(java.net.SocketAddress a) {
        return a instanceof java.net.InetSocketAddress i ? i.getAddress().getHostAddress() + ":" + i.getPort() : String.valueOf(a);
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        return ch.read(dst);
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        return ch.write(src);
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        return ch.write(srcs, offset, length);
    }

    @Override
    public void start() throws IOException {
        key = ch.register(progress.selector, SelectionKey.OP_READ, link);
    }

    @Override
    public void wantWrite() {
        key.interestOpsOr(SelectionKey.OP_WRITE);
    }

    @Override
    public void writeDone() {
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
        return "tcp";
    }
}
