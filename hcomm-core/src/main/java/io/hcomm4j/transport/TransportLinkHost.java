package io.hcomm4j.transport;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The transport as its links see it ({@link LinkHost}): each frame a link reads goes to the part of the transport that
 * owns it ({@link Matching}, {@link Rendezvous}, {@link Failures}, {@link RmaFrames}), and a link's lost or failed connection to
 * {@link Reconnector} or {@link Failures}. The only {@link LinkHost}, so the per-message calls stay monomorphic. Also
 * counts what reconnects cost, for diagnostics and tests.
 */
final class TransportLinkHost implements LinkHost {
    private final PeerTransport t;
    private final int rank;
    private final int size;
    private final long unexpectedLimit;
    private final Progress progress;
    private final int retryMax;
    private final Matching matching;
    private final Rendezvous rendezvous;
    private final Failures failures;
    private final Connections connections;
    private final Reconnector reconnector;
    private final RmaFrames rma;
    /** Connections re-established, frames and bytes sent again for them, duplicate frames dropped. */
    final AtomicLong reconnects = new AtomicLong();
    final AtomicLong framesResent = new AtomicLong();
    final AtomicLong bytesResent = new AtomicLong();
    final AtomicLong duplicatesDropped = new AtomicLong();

    TransportLinkHost(PeerTransport t, long unexpectedLimit, int retryMax, Matching matching, Rendezvous rendezvous,
                      Failures failures, Connections connections, Reconnector reconnector, RmaFrames rma) {
        this.t = t;
        this.rank = t.rank;
        this.size = t.size;
        this.progress = t.progress;
        this.unexpectedLimit = unexpectedLimit;
        this.retryMax = retryMax;
        this.matching = matching;
        this.rendezvous = rendezvous;
        this.failures = failures;
        this.connections = connections;
        this.reconnector = reconnector;
        this.rma = rma;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int worldSize() {
        return size;
    }

    @Override
    public long unexpectedLimit() {
        return unexpectedLimit;
    }

    @Override
    public ResendLog newResendLog() {
        return new ResendLog(t.limits.resendLogFrames(), t.limits.resendLogBytes());
    }

    @Override
    public Progress progress() {
        return progress;
    }

    @Override
    public boolean closing() {
        return t.isClosing();
    }

    @Override
    public boolean linksClosing() {
        return t.linksClosing();
    }

    @Override
    public int retryMax() {
        return retryMax;
    }

    @Override
    public boolean isDeclaredFailed() {
        return failures.isDeclaredFailed();
    }

    @Override
    public boolean isDead(int p) {
        return failures.isDead(p);
    }

    @Override
    public void onEager(PeerLink l, long commId, int tag, long length, int flags) throws PeerLink.ProtocolException {
        matching.onEager(l, commId, tag, length, flags);
    }

    @Override
    public void onUnexpectedComplete(PeerLink l, long commId, int tag, byte[] data, int flags) {
        matching.onUnexpectedComplete(l, commId, tag, data, flags);
    }

    @Override
    public void onRts(PeerLink l, long commId, int tag, long length, long msgId, int flags) throws PeerLink.ProtocolException {
        matching.onRts(l, commId, tag, length, msgId, flags);
    }

    @Override
    public void sendData(PeerLink l, SendRequest s, long msgId) {
        rendezvous.sendData(l, s, msgId);
    }

    @Override
    public void onDataRef(PeerLink l, long msgId, long fileSeq, long offset, long length) throws PeerLink.ProtocolException {
        rendezvous.onDataRef(l, msgId, fileSeq, offset, length);
    }

    @Override
    public void onDataDone(PeerLink l, long msgId, int flags) throws PeerLink.ProtocolException {
        rendezvous.onDataDone(l, msgId, flags);
    }

    @Override
    public void onFailedNotice(PeerLink from, int p, int flags) {
        failures.onFailedNotice(from, p, flags);
    }

    @Override
    public void onAbortNotice(PeerLink from, long commId) {
        failures.onAbortNotice(from, commId);
    }

    @Override
    public void onStatusRequest(PeerLink from) {
        failures.onStatusRequest(from);
    }

    @Override
    public MemorySegment rmaTarget(PeerLink l, int flags, long windowId, int opId, long offset, long length) {
        return rma.target(l.peer, flags, windowId, opId, offset, length);
    }

    @Override
    public void onRma(PeerLink l, int flags, long windowId, int opId, long offset, MemorySegment payload) {
        rma.complete(l.peer, flags, windowId, opId, offset, payload);
    }

    @Override
    public void linkFailed(PeerLink l, Exception cause) {
        failures.linkFailed(l, cause);
    }

    @Override
    public void railLost(PeerLink rail, Exception cause) {
        t.rails.lost(rail, cause);
    }

    @Override
    public void reconnect(PeerLink l) {
        reconnector.reconnect(l);
    }

    @Override
    public void retire(Conduit old) {
        connections.retire(old);
    }

    @Override
    public void releaseRetired(PeerLink l) {
        connections.releaseRetired(l);
    }

    @Override
    public void countDuplicate() {
        duplicatesDropped.incrementAndGet();
    }

    @Override
    public void countResumed(long frames, long bytes) {
        reconnects.incrementAndGet();
        framesResent.addAndGet(frames);
        bytesResent.addAndGet(bytes);
    }
}
