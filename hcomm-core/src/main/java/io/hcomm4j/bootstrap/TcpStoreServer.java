package io.hcomm4j.bootstrap;

import java.net.InetSocketAddress;

/**
 * Serves a {@link Store} over TCP: the launcher or rank 0 runs one per job. Every connection must pass the
 * HMAC handshake ({@link io.hcomm4j.security.Auth}) before any request is read; a connection that fails it is
 * closed and logged, and the server goes on.
 */
public final class TcpStoreServer implements AutoCloseable {
    /** Starts serving on {@code bind} (port 0 picks a free port). {@code secret} may be null (unauthenticated). */
    public static TcpStoreServer start(InetSocketAddress bind, String secret) {
        throw new UnsupportedOperationException("TODO");
    }

    /** The address and port it listens on. */
    public InetSocketAddress address() {
        throw new UnsupportedOperationException("TODO");
    }

    /** Stops serving and closes every connection. Idempotent. */
    @Override
    public void close() {
    }
}
