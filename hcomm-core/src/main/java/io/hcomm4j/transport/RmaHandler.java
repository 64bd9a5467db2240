package io.hcomm4j.transport;

import java.lang.foreign.MemorySegment;

/**
 * Where the transport hands the RMA frames it receives ({@link PeerTransport#setRmaHandler}): the progress hook of
 * one-sided communication. The transport does not interpret an RMA frame; the RMA layer that implements this does
 * (the kind, data type, op and status in {@code flags}, the window in {@code windowId}, the origin's op in
 * {@code opId}, the byte offset in {@code offset}).
 *
 * <p><b>Threads.</b> Both methods run on whichever thread holds the transport's progress token: its background
 * progress thread, or an application thread that waits for an op of this transport and polls meanwhile. They run one
 * at a time, for each connection in the order the frames arrived (so frames from one peer are applied in the order it
 * sent them). They must not block, and must not wait for transport ops (a wait throws
 * {@link IllegalStateException} there): while they run, nothing else is read from any peer. They may call
 * {@link PeerTransport#sendRma} (a reply), which never blocks.
 *
 * <p><b>Failures.</b> A method that throws, or a {@link #payloadTarget} that gives no usable segment (null, of another
 * size, read-only, or confined to one thread), costs only that frame: it is logged at WARN (the first time with its
 * stack trace, then at DEBUG), its payload is read and dropped, and {@link #onRma} is not called for it. The peer is
 * not failed and the connection goes on: the fault is this rank's, not the peer's. A frame cut off because its peer
 * failed never reaches {@link #onRma} (its payload may have landed in part). One cut off by a connection that a
 * reliable link re-establishes is read again, whole, into the same segment ({@link #payloadTarget} is not asked again),
 * and reaches {@link #onRma} once.
 */
public interface RmaHandler {
    /**
     * Where the payload of an RMA frame from world rank {@code peer} goes: a segment of exactly {@code length} bytes
     * ({@code length > 0}; at most {@link PeerTransport#MAX_RMA_PAYLOAD}), writable and usable from any thread. The
     * transport writes the payload straight into it, then calls {@link #onRma} with it. Not called for a frame without
     * payload.
     */
    MemorySegment payloadTarget(int peer, int flags, long windowId, int opId, long offset, long length);

    /**
     * The frame from world rank {@code peer} is complete: its payload is in the segment {@link #payloadTarget} gave
     * ({@code payload} is that segment; null if the frame had no payload).
     */
    void onRma(int peer, int flags, long windowId, int opId, long offset, MemorySegment payload);
}
