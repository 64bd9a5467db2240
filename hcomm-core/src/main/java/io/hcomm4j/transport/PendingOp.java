package io.hcomm4j.transport;

/**
 * A point-to-point op (user channel) that has waited at least {@code thresholdNanos}, as the watchdog sees it.
 *
 * @param commId    communicator id
 * @param kind      {@code send}, {@code recv} or {@code probe}
 * @param peer      world rank it waits for, or {@link PeerTransport#ANY}
 * @param waited    nanoseconds since the watchdog first saw it pending
 * @param firstTime true the first time it is returned
 */
public record PendingOp(long commId, String kind, int peer, int tag, long bytes, long waited, boolean firstTime,
                        String description) {
    /** {@code r} as the watchdog and the published status show it. */
    static PendingOp of(Request<?> r, long waited, boolean first) {
        return switch (r) {
            case SendRequest sr -> new PendingOp(sr.commId, "send", sr.dst, sr.tag, sr.size, waited, first, sr.describe());
            case RecvRequest rr -> new PendingOp(rr.commId, "recv", rr.src, rr.tag, rr.buf.byteSize(), waited, first, rr.describe());
            case ProbeRequest pr -> new PendingOp(pr.commId, "probe", pr.src, pr.tag, 0, waited, first, pr.describe());
        };
    }
}
