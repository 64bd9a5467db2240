package io.hcomm4j.transport;

import io.hcomm4j.CommAbortedException;
import java.lang.foreign.MemorySegment;

/**
 * A send in flight: eager (written with its header) or rendezvous (RTS, wait for CTS, then DATA), or an RMA frame
 * ({@link PeerTransport#sendRma}: {@code commId} is the window id, {@code tag} the op id).
 */
public final class SendRequest extends Request<Void> {
    final int dst;
    final long size;
    /** Carried in the EAGER/RTS frame's flags: the collective's fingerprint, or 0. */
    final int flags;
    /** World rank → communicator rank, or null when they are the same (for the ranks a failure names). */
    private final int[] rankMap;
    /** An RMA frame: its window id is no communicator's, so aborts and stuck-op scans of communicators leave it alone. */
    final boolean rma;
    /** {@link DataPump#HIGH}: the chunks of its payload go before those of other messages to the same peer. */
    byte priority;
    /** Chunked payload ({@link DataPump}, under its monitor): bytes handed to links so far, bytes not yet acknowledged. */
    long sentOffset;
    long unacked;

    SendRequest(PeerTransport transport, long commId, int dst, int tag, MemorySegment buf, int flags, int[] rankMap) {
        this(transport, commId, dst, tag, buf, flags, rankMap, false);
    }

    private SendRequest(PeerTransport transport, long commId, int dst, int tag, MemorySegment buf, int flags, int[] rankMap,
                        boolean rma) {
        super(transport, commId, tag, buf);
        this.dst = dst;
        this.size = buf.byteSize();
        this.flags = flags;
        this.rankMap = rankMap;
        this.rma = rma;
    }

    /** An RMA frame to world rank {@code dst}. */
    static SendRequest rma(PeerTransport transport, long windowId, int dst, int opId, MemorySegment payload, int flags) {
        return new SendRequest(transport, windowId, dst, opId, payload, flags, null, true);
    }

    @Override
    int[] rankMap() {
        return rankMap;
    }

    @Override
    boolean rmaFrame() {
        return rma;
    }

    @Override
    int tracePeer() {
        return dst;
    }

    @Override
    String describe() {
        if (rma) return "RMA frame to rank " + dst + " (window " + commId + ", op " + tag + ", " + size + " bytes)";
        return "send to rank " + dst + " (tag " + tag + ", " + size + " bytes)";
    }

    @Override
    void abandon() {
        transport.abandonSend(this);
    }

    void abort(String why) {
        fail(new CommAbortedException("rank " + transport.rank + ": " + describe() + " " + why));
    }
}
