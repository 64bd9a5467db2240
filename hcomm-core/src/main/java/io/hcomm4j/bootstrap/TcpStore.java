package io.hcomm4j.bootstrap;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Collection;

/** Client of a {@link TcpStoreServer}. */
public final class TcpStore implements Store {
    /**
     * Connects to the server at {@code address}, retrying with backoff until it answers or {@code timeout}
     * passes (ranks may start before the server), and proves {@code secret}.
     */
    public static TcpStore connect(InetSocketAddress address, String secret, Duration timeout) {
        throw new UnsupportedOperationException("TODO");
    }

    /** Local address of the store connection: the interface that reaches the store's host. */
    public java.net.InetAddress localAddress() {
        throw new UnsupportedOperationException("TODO");
    }

    @Override public void set(String key, byte[] value) { throw new UnsupportedOperationException("TODO"); }
    @Override public byte[] get(String key, Duration timeout) { throw new UnsupportedOperationException("TODO"); }
    @Override public byte[] tryGet(String key) { throw new UnsupportedOperationException("TODO"); }
    @Override public void await(Collection<String> keys, Duration timeout) { throw new UnsupportedOperationException("TODO"); }
    @Override public long add(String key, long delta) { throw new UnsupportedOperationException("TODO"); }
    @Override public byte[] compareAndSet(String key, byte[] expected, byte[] desired) { throw new UnsupportedOperationException("TODO"); }
    @Override public boolean delete(String key) { throw new UnsupportedOperationException("TODO"); }
    @Override public void close() { }
}
