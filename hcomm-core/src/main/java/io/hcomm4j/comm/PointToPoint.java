package io.hcomm4j.comm;

import static io.hcomm4j.Communicator.ANY_SOURCE;
import static io.hcomm4j.Communicator.ANY_TAG;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import io.hcomm4j.monitor.OpTrace;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.Optional;

/**
 * The point-to-point calls of a {@link CommunicatorImpl} (send, recv, probe, iprobe): checked, counted in the metrics,
 * and handed to the transport with the communicator's ranks translated to world ranks (and back in the statuses).
 */
final class PointToPoint {
    private final CommunicatorImpl comm;
    private final PeerTransport transport;
    private final long commId;
    private final int rank;
    private final int size;
    /** World rank → communicator rank (-1: not a member), or null for the world communicator. */
    private final int[] worldToComm;
    private final ArgumentChecks check;
    private final CommunicatorHealth health;
    private final OpMetrics metrics;
    private final OpTrace trace;

    PointToPoint(CommunicatorImpl comm, PeerTransport transport, long commId, int rank, int size, int[] worldToComm,
                 ArgumentChecks check, CommunicatorHealth health, OpMetrics metrics, OpTrace trace) {
        this.comm = comm;
        this.transport = transport;
        this.commId = commId;
        this.rank = rank;
        this.size = size;
        this.worldToComm = worldToComm;
        this.check = check;
        this.health = health;
        this.metrics = metrics;
        this.trace = trace;
    }

    CommFuture<Void> send(MemorySegment buf, int peer, int tag) {
        return send(buf, peer, tag, false);
    }

    /** A send; {@code high}: its payload goes before other messages' to the same peer (a stream of HIGH priority). */
    CommFuture<Void> send(MemorySegment buf, int peer, int tag, boolean high) {
        comm.checkOpen();
        health.checkNotAborted("send");
        Objects.requireNonNull(buf, "buf");
        if (peer < 0 || peer >= size) {
            throw new IllegalArgumentException("rank " + rank + ": send: peer " + peer + " is out of range [0, " + size + ")");
        }
        if (tag < 0) throw new IllegalArgumentException("rank " + rank + ": send: tag " + tag + " must be >= 0");
        check.shared(buf, "send");
        io.hcomm4j.transport.SendRequest f = transport.send(commId, comm.world(peer), tag, buf, 0, worldToComm, high);
        // recorded once posted: the message goes before the record's clock read (a refused send records nothing)
        f.recordPosted(trace, "send", peer, tag, buf.byteSize());
        metrics.count(CollectiveFrame.SEND_METRIC, buf.byteSize()); // after: an eager message is on its way before the counting
        return f;
    }

    CommFuture<Status> recv(MemorySegment buf, int peer, int tag) {
        comm.checkOpen();
        health.checkNotAborted("recv");
        Objects.requireNonNull(buf, "buf");
        check.source(peer, tag, "recv");
        if (buf.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": recv: buf is read-only");
        check.shared(buf, "recv");
        metrics.count(CollectiveFrame.RECV_METRIC, buf.byteSize());
        // recorded before the post: its end (on whichever thread completes it) then needs no handshake with this one
        long ticket = trace.open(OpTrace.Kind.P2P, "recv", -1, peer == ANY_SOURCE ? -1 : peer, tag == ANY_TAG ? -1 : tag, null, null,
                -1, buf.byteSize(), 0, 0, OpTrace.State.STARTED);
        return transport.recv(commId, anySource(peer), anyTag(tag), buf, worldToComm, trace, ticket);
    }

    CommFuture<Status> probe(int peer, int tag) {
        comm.checkOpen();
        health.checkNotAborted("probe");
        check.source(peer, tag, "probe");
        return transport.probe(commId, anySource(peer), anyTag(tag), worldToComm);
    }

    Optional<Status> iprobe(int peer, int tag) {
        comm.checkOpen();
        check.source(peer, tag, "iprobe");
        return Optional.ofNullable(transport.iprobe(commId, anySource(peer), anyTag(tag), worldToComm));
    }

    private int anySource(int peer) {
        return peer == ANY_SOURCE ? PeerTransport.ANY : comm.world(peer);
    }

    private static int anyTag(int tag) {
        return tag == ANY_TAG ? PeerTransport.ANY : tag;
    }
}
