package io.hcomm4j.transport;

import io.hcomm4j.Status;

/** A blocking probe: completes with the status of the first matching message that can be received, without receiving it. */
public final class ProbeRequest extends Request<Status> {
    /** Source world rank, or {@link TcpTransport#ANY}. */
    final int src;

    ProbeRequest(TcpTransport transport, long commId, int src, int tag) {
        super(transport, commId, tag, null);
        this.src = src;
    }

    boolean matches(int msgSrc, int msgTag) {
        return TcpTransport.matches(src, tag, msgSrc, msgTag);
    }

    @Override
    String describe() {
        return "probe for a message from " + (src == TcpTransport.ANY ? "any rank" : "rank " + src)
                + " (tag " + (tag == TcpTransport.ANY ? "any" : String.valueOf(tag)) + ")";
    }

    @Override
    void abandon() {
        transport.abandonWaiting(this);
    }
}
