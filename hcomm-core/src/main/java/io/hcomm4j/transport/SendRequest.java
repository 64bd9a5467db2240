package io.hcomm4j.transport;

import io.hcomm4j.CommAbortedException;
import java.lang.foreign.MemorySegment;

/** A send in flight: eager (written with its header) or rendezvous (RTS, wait for CTS, then DATA). */
public final class SendRequest extends Request<Void> {
    final int dst;
    final long size;

    SendRequest(TcpTransport transport, long commId, int dst, int tag, MemorySegment buf) {
        super(transport, commId, tag, buf);
        this.dst = dst;
        this.size = buf.byteSize();
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
