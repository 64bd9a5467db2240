package io.hcomm4j.transport;

import io.hcomm4j.ucx.UcpEndpoint;
import io.hcomm4j.ucx.UcpMemory;
import io.hcomm4j.ucx.UcpRequest;
import java.lang.foreign.MemorySegment;
import java.util.function.IntConsumer;

/**
 * What the one-sided layer needs of a UCX transport ({@link PeerTransport#ucxRemoteAccess}): memory registered with
 * the transport's UCX context, the endpoint of each pair that talks UCX, and completion of UCX requests by the progress
 * engine. A window's puts, gets and atomics then go straight into the target's memory (RDMA on InfiniBand and RoCE),
 * without the target's progress engine.
 *
 * <p><b>Internal:</b> the contract between the RMA layer and the transport.
 */
public final class UcxRemoteAccess {
    private final PeerTransport transport;
    private final UcxEngine engine;

    UcxRemoteAccess(PeerTransport transport, UcxEngine engine) {
        this.transport = transport;
        this.engine = engine;
    }

    /**
     * The endpoint to world rank {@code peer} (connecting first, until {@code deadline}), or null when the pair does not
     * talk UCX (the peer did not offer it, or it is this rank). The endpoint closes when the link does (the peer failed):
     * its operations then throw.
     */
    public UcpEndpoint endpoint(int peer, long deadline) {
        if (peer == transport.rank) return null;
        transport.connect(peer, deadline);
        return transport.links()[peer].ch instanceof UcxConduit c ? c.endpoint() : null;
    }

    /** Registers {@code segment} (native, non-empty) with the transport's UCX context; close it before the transport. */
    public UcpMemory map(MemorySegment segment) {
        return engine.map(segment);
    }

    /**
     * Runs {@code done} with the request's status (an op on the endpoint to world rank {@code peer}) (0: OK, negative: UCX's error) on the progress engine once
     * {@code request} completes, then frees the request; at once if it has. A request still pending when the transport
     * closes completes with UCX's "canceled" status.
     */
    public void watch(int peer, UcpRequest request, IntConsumer done) {
        engine.watch(request, status -> {
            if (status < 0 && transport.links()[peer].ch instanceof UcxConduit c && peerGone(c, status)) {
                // the op learnt it first: the link fails now (as its reader would at its next read), so the op's
                // caller gets PeerFailedException and finds the peer failed, like any op on it
                c.link.lost(new java.io.EOFException("rank " + transport.rank + ": UCX reports rank " + peer
                        + " unreachable: " + engine.statusText(status)));
            }
            done.accept(status);
        });
    }

    /** UCX's statuses for a peer that is gone: the endpoint's error handler ran, or the op says so itself. */
    private static boolean peerGone(UcxConduit c, int status) {
        return c.endpoint().failure() != 0 || status == IO_ERROR || status == UNREACHABLE || status == CONNECTION_RESET
                || status == ENDPOINT_TIMEOUT;
    }

    private static final int IO_ERROR = -3, UNREACHABLE = -6, CONNECTION_RESET = -25, ENDPOINT_TIMEOUT = -80;

    /**
     * Keeps {@code resource} (remote keys, registered memory) to be closed with the transport, before its worker, if
     * its owner has not closed it by then; {@link #release} when the owner closes it itself.
     */
    public void keep(AutoCloseable resource) {
        engine.keep(resource);
    }

    /** The owner closes {@code resource} itself (it was {@link #keep kept}). */
    public void release(AutoCloseable resource) {
        engine.release(resource);
    }

    /** Counts a put, get, atomic or flush started through UCX (diagnostics: {@link PeerTransport#ucxTaggedMessages}). */
    public void counted() {
        engine.oneSidedOps.incrementAndGet();
    }

    /** UCX's text for a status. */
    public String statusText(int status) {
        return engine.statusText(status);
    }
}
