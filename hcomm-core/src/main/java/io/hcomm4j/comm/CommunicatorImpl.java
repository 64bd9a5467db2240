package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.Status;
import io.hcomm4j.Stream;
import io.hcomm4j.transport.TcpTransport;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** A communicator: argument checks, then the transport. Ranks equal world ranks (sub-communicators come later). */
final class CommunicatorImpl implements Communicator {
    private final Session session;
    private final TcpTransport transport;
    private final long commId;
    private final int rank;
    private final int size;
    private volatile boolean closed;

    CommunicatorImpl(Session session, TcpTransport transport, long commId, int rank, int size) {
        this.session = session;
        this.transport = transport;
        this.commId = commId;
        this.rank = rank;
        this.size = size;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public CommFuture<Void> sendAsync(MemorySegment buf, int peer, int tag) {
        checkOpen();
        Objects.requireNonNull(buf, "buf");
        if (peer < 0 || peer >= size) {
            throw new IllegalArgumentException("rank " + rank + ": send: peer " + peer + " is out of range [0, " + size + ")");
        }
        if (tag < 0) throw new IllegalArgumentException("rank " + rank + ": send: tag " + tag + " must be >= 0");
        checkShared(buf, "send");
        return transport.send(commId, peer, tag, buf);
    }

    @Override
    public CommFuture<Status> recvAsync(MemorySegment buf, int peer, int tag) {
        checkOpen();
        Objects.requireNonNull(buf, "buf");
        checkSource(peer, tag, "recv");
        if (buf.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": recv: buf is read-only");
        checkShared(buf, "recv");
        return transport.recv(commId, peer == ANY_SOURCE ? TcpTransport.ANY : peer, tag == ANY_TAG ? TcpTransport.ANY : tag, buf);
    }

    @Override
    public CommFuture<Status> probeAsync(int peer, int tag) {
        checkOpen();
        checkSource(peer, tag, "probe");
        return transport.probe(commId, peer == ANY_SOURCE ? TcpTransport.ANY : peer, tag == ANY_TAG ? TcpTransport.ANY : tag);
    }

    @Override
    public java.util.Optional<Status> iprobe(int peer, int tag) {
        checkOpen();
        checkSource(peer, tag, "iprobe");
        return java.util.Optional.ofNullable(
                transport.iprobe(commId, peer == ANY_SOURCE ? TcpTransport.ANY : peer, tag == ANY_TAG ? TcpTransport.ANY : tag));
    }

    private void checkSource(int peer, int tag, String op) {
        if (peer != ANY_SOURCE && (peer < 0 || peer >= size)) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": peer " + peer + " is out of range [0, " + size
                    + ") and is not ANY_SOURCE");
        }
        if (tag < 0 && tag != ANY_TAG) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": tag " + tag + " must be >= 0 or ANY_TAG");
        }
    }

    @Override
    public Stream newStream() {
        checkOpen();
        StreamImpl s = new StreamImpl(this, session);
        session.register(s);
        return s;
    }

    private void checkShared(MemorySegment buf, String op) {
        if (!buf.scope().isAlive()) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": buf belongs to a closed arena");
        }
        if (!transport.usableFromAnyThread(buf)) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": buf is confined to the thread that allocated it "
                    + "(Arena.ofConfined()); the library's threads move the data, so allocate it with Arena.ofShared(), "
                    + "Arena.ofAuto() or Arena.global()");
        }
    }

    long timeoutNanos() {
        return session.config().timeout().toNanos();
    }

    private void checkOpen() {
        if (closed || session.isClosed()) {
            throw new IllegalStateException("rank " + rank + ": the communicator is closed");
        }
    }

    @Override
    public boolean isClosed() {
        return closed || session.isClosed();
    }

    void markClosed() {
        closed = true;
    }

    @Override
    public void close() {
        closed = true;
    }

    @Override
    public String toString() {
        return "Communicator{rank=" + rank + ", size=" + size + ", id=" + commId + "}";
    }
}
