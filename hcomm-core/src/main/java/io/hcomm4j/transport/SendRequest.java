package io.hcomm4j.transport;

import io.hcomm4j.CommAbortedException;
import java.lang.foreign.MemorySegment;

/** A send in flight: eager (written with its header) or rendezvous (RTS, wait for CTS, then DATA). */
public final class SendRequest extends Request<Void> {
    final int dst;
    final long size;
    /** Carried in the EAGER/RTS frame's flags: the collective's fingerprint, or 0. */
    final int flags;
    /** World rank → communicator rank, or null when they are the same (for the ranks a failure names). */
    private final int[] rankMap;

    SendRequest(PeerTransport transport, long commId, int dst, int tag, MemorySegment buf, int flags, int[] rankMap) {
        super(transport, commId, tag, buf);
        this.dst = dst;
        this.size = buf.byteSize();
        this.flags = flags;
        this.rankMap = rankMap;
    }

    @Override
    int[] rankMap() {
        return rankMap;
    }

    @Override
    String describe() {
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
