package io.hcomm4j.transport;

import io.hcomm4j.Status;

/** A blocking probe: completes with the status of the first matching message that can be received, without receiving it. */
public final class ProbeRequest extends Request<Status> {
    /** Source world rank, or {@link PeerTransport#ANY}. */
    final int src;
    /** World rank → communicator rank for the Status, or null when they are the same. */
    final int[] sourceMap;

    ProbeRequest(PeerTransport transport, long commId, int src, int tag, int[] sourceMap) {
        super(transport, commId, tag, null);
        this.src = src;
        this.sourceMap = sourceMap;
    }

    void succeedWith(int worldSrc, int msgTag, long size) {
        succeed(new Status(sourceMap == null ? worldSrc : sourceMap[worldSrc], msgTag, size));
    }

    boolean matches(int msgSrc, int msgTag) {
        return Matching.matches(src, tag, msgSrc, msgTag);
    }

    @Override
    int[] rankMap() {
        return sourceMap;
    }

    @Override
    String describe() {
        return "probe for a message from " + (src == PeerTransport.ANY ? "any rank" : "rank " + src)
                + " (tag " + (tag == PeerTransport.ANY ? "any" : String.valueOf(tag)) + ")";
    }

    @Override
    void abandon() {
        transport.abandonWaiting(this);
    }
}
