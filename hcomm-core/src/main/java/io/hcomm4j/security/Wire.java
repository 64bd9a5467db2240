package io.hcomm4j.security;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * A connection that has just proven the job secret ({@link Auth}), still blocking: plain TCP, or TLS when the job runs
 * with {@code HCOMM_TLS}. What comes after the handshake (hellos, store requests) reads and writes through it, so
 * every byte goes through TLS when TLS is on; a transport then takes {@link #channel()} and {@link #tls()} for its
 * non-blocking conduit.
 */
public final class Wire {
    private final SocketChannel channel;
    private final TlsChannel tls;

    private Wire(SocketChannel channel, TlsChannel tls) {
        this.channel = channel;
        this.tls = tls;
    }

    static Wire plain(SocketChannel channel) {
        return new Wire(channel, null);
    }

    static Wire secure(SocketChannel channel, TlsChannel tls) {
        return new Wire(channel, tls);
    }

    /** The socket underneath. */
    public SocketChannel channel() {
        return channel;
    }

    /** The TLS session, or {@code null} on a plain connection. */
    public TlsChannel tls() {
        return tls;
    }

    /** Bytes from the peer; reads wait at most the socket's SO_TIMEOUT ({@link #readTimeout}). */
    public InputStream in() throws IOException {
        return tls == null ? channel.socket().getInputStream() : tls.in();
    }

    /** Bytes to the peer; each write leaves in full before it returns. */
    public OutputStream out() throws IOException {
        return tls == null ? channel.socket().getOutputStream() : tls.out();
    }

    /** Writes all of {@code b}. */
    public void write(ByteBuffer b) throws IOException {
        if (tls == null) {
            while (b.hasRemaining()) channel.write(b);
        } else {
            tls.writeBlocking(b);
        }
    }

    /** How long a read may wait (0: forever). */
    public void readTimeout(int millis) throws IOException {
        channel.socket().setSoTimeout(millis);
    }

    /** The setup is over: the channel goes non-blocking under a conduit, or is closed. */
    public void endBlockingPhase() {
        if (tls != null) tls.endBlockingPhase();
    }
}
