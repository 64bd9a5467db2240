package io.hcomm4j.transport;

import io.hcomm4j.HcommException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The transport's part of one-sided communication: sends {@link Frame#RMA} frames, and hands those that arrive to the
 * {@link RmaHandler} (the links ask through {@link LinkHost#rmaTarget} and {@link LinkHost#onRma}). Nothing here knows
 * what an RMA frame means: that is the RMA layer's.
 *
 * <p>A fault on the receiving side is this rank's, never the peer's, so it costs the frame and not the connection: with
 * no handler set the frame is read and dropped (logged once at WARN: the RMA layer is not there, or not yet); a handler
 * that throws or gives no usable segment has its frame dropped likewise (logged, see {@link RmaHandler}).
 */
final class RmaFrames {
    private static final org.slf4j.Logger LOG = PeerTransport.LOG;

    private final PeerTransport t;
    private final int rank;
    private final PeerLink[] links;
    private volatile RmaHandler handler;
    /** Frames dropped because no handler was set, and because the handler failed (diagnostics, tests). */
    final AtomicLong droppedNoHandler = new AtomicLong();
    final AtomicLong handlerFailures = new AtomicLong();
    private final AtomicBoolean warnedNoHandler = new AtomicBoolean();
    private final AtomicBoolean warnedFailure = new AtomicBoolean();

    RmaFrames(PeerTransport t, int rank, PeerLink[] links) {
        this.t = t;
        this.rank = rank;
        this.links = links;
    }

    void setHandler(RmaHandler h) {
        handler = h;
    }

    /** See {@link PeerTransport#sendRma}. */
    SendRequest send(int peer, int flags, long windowId, int opId, long offset, MemorySegment payload) {
        MemorySegment buf = payload == null ? MemorySegment.NULL : payload;
        if (peer < 0 || peer >= t.size || peer == rank) {
            throw new IllegalArgumentException("rank " + rank + ": RMA frame to rank " + peer + " (world size " + t.size
                    + "; to itself the RMA layer works in its own memory)");
        }
        long size = buf.byteSize();
        if (size > PeerTransport.MAX_RMA_PAYLOAD) {
            throw new IllegalArgumentException("rank " + rank + ": RMA payload of " + size + " bytes to rank " + peer
                    + " (at most " + PeerTransport.MAX_RMA_PAYLOAD + " per frame)");
        }
        // the progress engine may write it later, from any thread: a confined segment would fail the link there
        if (size > 0 && !t.usableFromAnyThread(buf)) {
            throw new IllegalArgumentException("rank " + rank + ": RMA payload to rank " + peer
                    + " is confined to one thread (use a shared or global arena, or a heap segment)");
        }
        SendRequest s = SendRequest.rma(t, windowId, peer, opId, buf, flags);
        if (t.isClosing()) {
            s.abort("failed: the session is closed");
            return s;
        }
        PeerLink l = links[peer];
        PeerLink.State st = l.state;
        if (st != PeerLink.State.CONNECTED && st != PeerLink.State.RECONNECTING) {
            if (st == PeerLink.State.FAILED || st == PeerLink.State.CLOSED) {
                s.fail(t.failures.peerFailed(peer, s.describe(), null));
                return s;
            }
            if (t.progress.heldByCurrentThread()) {
                // a callback (a reply goes to the peer that asked, which is connected): connecting would block the poller
                s.fail(new HcommException("rank " + rank + ": " + s.describe() + " from the progress engine: rank "
                        + peer + " is not connected yet, and the progress engine cannot wait for a connection"));
                return s;
            }
            try {
                l = t.connections.linkTo(peer, System.nanoTime() + t.timeoutNanos);
            } catch (HcommException e) {
                s.fail(e);
                return s;
            }
        }
        if (!l.sendFrame(Frame.RMA, flags, windowId, opId, size, offset, size == 0 ? null : buf, s)) {
            s.fail(t.failures.peerFailed(peer, s.describe(), null));
        }
        return s;
    }

    /** See {@link LinkHost#rmaTarget}. */
    MemorySegment target(int peer, int flags, long windowId, int opId, long offset, long length) {
        RmaHandler h = handler;
        if (h == null) {
            noHandler(peer, windowId, opId);
            return null;
        }
        MemorySegment target;
        try {
            target = h.payloadTarget(peer, flags, windowId, opId, offset, length);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            handlerFailed("payloadTarget", peer, flags, windowId, opId, offset, length, e);
            return null;
        }
        String bad = target == null ? "null"
                : target.byteSize() != length ? "a segment of " + target.byteSize() + " bytes"
                : target.isReadOnly() ? "a read-only segment"
                : !t.usableFromAnyThread(target) ? "a segment confined to one thread" : null;
        if (bad != null) {
            handlerFailed("payloadTarget", peer, flags, windowId, opId, offset, length,
                    new IllegalStateException("it returned " + bad + " for a payload of " + length + " bytes"));
            return null;
        }
        return target;
    }

    /** See {@link LinkHost#onRma}. */
    void complete(int peer, int flags, long windowId, int opId, long offset, MemorySegment payload) {
        RmaHandler h = handler;
        if (h == null) {
            noHandler(peer, windowId, opId);
            return;
        }
        try {
            h.onRma(peer, flags, windowId, opId, offset, payload);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            handlerFailed("onRma", peer, flags, windowId, opId, offset, payload == null ? 0 : payload.byteSize(), e);
        }
    }

    private void noHandler(int peer, long windowId, int opId) {
        droppedNoHandler.incrementAndGet();
        if (warnedNoHandler.compareAndSet(false, true)) {
            LOG.warn("rank {}: an RMA frame from rank {} (window {}, op {}) came but no RMA handler is set: dropped (this and"
                    + " later ones; logged once)", rank, peer, windowId, opId);
        }
    }

    private void handlerFailed(String what, int peer, int flags, long windowId, int opId, long offset, long length,
                               Throwable e) {
        handlerFailures.incrementAndGet();
        if (warnedFailure.compareAndSet(false, true)) {
            LOG.warn("rank {}: the RMA handler failed in {} for a frame from rank {} (window {}, op {}, flags 0x{}, offset {},"
                    + " {} bytes); the connection goes on (further failures are logged at DEBUG)",
                    rank, what, peer, windowId, opId, Integer.toHexString(flags), offset, length, e);
        } else {
            LOG.debug("rank {}: the RMA handler failed in {} for a frame from rank {} (window {}, op {}): {}",
                    rank, what, peer, windowId, opId, e.toString());
        }
    }
}
