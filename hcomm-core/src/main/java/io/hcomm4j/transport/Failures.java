package io.hcomm4j.transport;

import io.hcomm4j.CommAbortedException;
import io.hcomm4j.PeerFailedException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Which peers failed, how this rank learned it, and who is told. A peer has failed when its connection breaks without
 * a BYE (and cannot be re-established), when it breaks the frame protocol, when nothing came from it for the heartbeat
 * timeout, or when another rank says so (a FAILED notice). Whatever the way, a failure goes through
 * {@link #linkFailed} in one order: it is recorded, the layer above is told (its communicators turn DEGRADED), the ops
 * that depended on the peer fail, and the connected peers are told (each rank forwards a failure once). So a thread
 * that catches the {@link PeerFailedException} of its op finds its communicator DEGRADED already.
 *
 * <p>With heartbeats on, each rank keeps a connection to the next live rank, so the live ranks form a ring over which
 * every failure reaches everyone, even ranks that never talked to the failed one; a connection that comes up is told
 * the failures known so far, so a failure found while it was being opened is not lost to its peer.
 */
final class Failures {
    /** An abort notice to a peer not connected yet waits at most this long for the connection (it is sent in the background). */
    private static final long ABORT_CONNECT_MAX_NANOS = 10_000_000_000L;

    private final PeerTransport t;
    private final int rank;
    private final int size;
    private final PeerLink[] links;
    /** The match lock: the failed ranks are read together with the match tables (revive changes both at once). */
    private final ReentrantLock lock;
    /** Ranks known to have failed (not those that closed in order), why, and how (a {@link Frame} FAIL_ constant; 0: assumed, not announced); guarded by {@link #lock}. */
    private final boolean[] dead;
    private final String[] deadWhy;
    private final int[] deadKind;
    /** Ranks that closed their session in order while this one was open (told above once); guarded by {@link #lock}. */
    private final boolean[] left;
    /** Another rank declared this one failed (it was silent too long): no more notices or neighbour connections. */
    private volatile boolean declaredFailed;
    private volatile TransportEvents events = TransportEvents.NONE;
    /** Whether {@link #connectNeighbour} keeps the ring (see {@link PeerTransport#withoutNeighbourRing}). */
    volatile boolean neighbourRing = true;

    Failures(PeerTransport t, int rank, PeerLink[] links, ReentrantLock lock) {
        this.t = t;
        this.rank = rank;
        this.size = links.length;
        this.links = links;
        this.lock = lock;
        this.dead = new boolean[size];
        this.deadWhy = new String[size];
        this.deadKind = new int[size];
        this.left = new boolean[size];
    }

    void setEvents(TransportEvents events) {
        this.events = events == null ? TransportEvents.NONE : events;
    }

    TransportEvents events() {
        return events;
    }

    /** See {@link PeerTransport#assumeFailed}: {@code p} is failed from the start, nobody is told. */
    void assumeDead(int p, String why) {
        lock.lock();
        try {
            dead[p] = true;
            deadWhy[p] = why;
            t.matching.assumeFailed(p);
        } finally {
            lock.unlock();
        }
        synchronized (links[p]) {
            links[p].state = PeerLink.State.FAILED;
        }
    }

    /**
     * A replacement process takes {@code p}'s slot (lock held): {@code p} must be known to have failed; a link to it that
     * never connected is left FAILED, and {@code p} is live again.
     *
     * @throws IllegalStateException if {@code p} is not known to have failed
     */
    void revive(int p) {
        PeerLink old = links[p];
        if (p == rank || !dead[p] || (old.state != PeerLink.State.FAILED && old.state != PeerLink.State.CLOSED
                && old.state != PeerLink.State.IDLE)) {
            throw new IllegalStateException("rank " + rank + ": rank " + p + " is not known to have failed (state "
                    + old.state + "); only a failed rank's slot can be taken over");
        }
        if (old.state == PeerLink.State.IDLE) {
            synchronized (old) {
                old.state = PeerLink.State.FAILED;
                old.notifyAll();
            }
        }
        dead[p] = false;
        deadWhy[p] = null;
        deadKind[p] = 0;
        left[p] = false;
    }

    /**
     * The link to {@code l.peer} broke for good ({@link PeerLink#fail}): it goes FAILED (once; its connection closed and
     * the loss logged), then as {@link #linkFailed(PeerLink, Exception, boolean)}.
     */
    void linkFailed(PeerLink l, Exception cause) {
        int was = l.markFailed(cause);
        if (was != PeerLink.ALREADY_FAILED) linkFailed(l, cause, was == PeerLink.WAS_CONNECTED);
    }

    /**
     * The one place a failed link's peer is failed (the link is FAILED already). In this order: the failure is recorded
     * and the layer above told, then the ops that depended on the peer fail, then the connected peers are told; so a
     * thread that catches its op's {@link PeerFailedException} finds its communicator DEGRADED. {@code wasConnected}: the connection existed, so (without a BYE) this is
     * evidence that the peer failed, which the others are told; a connection that could not be made fails only this
     * rank's ops (the peer may have closed in order).
     */
    void linkFailed(PeerLink l, Exception cause, boolean wasConnected) {
        int kind = kindOf(cause);
        boolean fresh = recordAndTellAbove(l, cause, kind, wasConnected);
        failOps(l, cause);
        if (fresh) tellPeers(l.peer, kind);
    }

    /** How a failure with {@code cause} is reported to the other ranks (a {@link Frame} FAIL_ constant). */
    static int kindOf(Exception cause) {
        return cause instanceof UnexpectedLimitException ? Frame.FAIL_LIMIT
                : cause instanceof CorruptMappingException ? Frame.FAIL_CORRUPT
                : cause instanceof PeerLink.ProtocolException ? Frame.FAIL_PROTOCOL
                : cause instanceof PeerLink.ReportedFailure rf ? rf.kind : Frame.FAIL_LOST;
    }

    /**
     * Records the failure if this is evidence of it and it is new, then tells the layer above; true if it was new. A peer
     * that said BYE is not failed, but the layer above hears that it left (its communicators are DEGRADED all the same).
     */
    private boolean recordAndTellAbove(PeerLink l, Exception cause, int kind, boolean wasConnected) {
        if (l.peerSaidBye) {
            if (wasConnected && !t.isClosing() && !declaredFailed && markLeft(l.peer)) tellLeft(l.peer);
            return false;
        }
        // a rank declared failed itself is cut off: what it sees of the others is no evidence against them
        boolean evidence = !t.isClosing() && wasConnected && !declaredFailed;
        String why = (kind == Frame.FAIL_PROTOCOL ? "protocol error: " : "") + cause.getMessage();
        boolean fresh = evidence && markDead(l.peer, why, kind);
        if (fresh) tellAbove(l.peer, why, kind);
        return fresh;
    }

    /** Fails every op that depended on the peer of {@code l} (its link is FAILED or CLOSED). */
    void failOps(PeerLink l, Exception cause) {
        int p = l.peer;
        List<Request<?>> doomed = new ArrayList<>();
        t.matching.failPeer(p, doomed);
        t.rails.close(p); // first: the chunks its rails had in flight go back to the pump, which drainRequests empties
        l.drainRequests(doomed);
        for (Request<?> r : doomed) {
            if (t.isClosing()) r.fail(new CommAbortedException("rank " + rank + ": " + r.describe() + " failed: the session is closed"));
            else r.fail(peerFailed(p, r.describe(), cause));
        }
    }

    /** Records the failure of {@code p} ({@code kind}: how it was learned); true if it was not known. */
    private boolean markDead(int p, String why, int kind) {
        lock.lock();
        try {
            if (dead[p] || t.isClosing()) return false;
            dead[p] = true;
            deadWhy[p] = why;
            deadKind[p] = kind;
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Records that {@code p} closed its session; true if that was not known (nor its failure). */
    private boolean markLeft(int p) {
        lock.lock();
        try {
            if (left[p] || dead[p] || t.isClosing()) return false;
            left[p] = true;
            return true;
        } finally {
            lock.unlock();
        }
    }

    private void tellLeft(int p) {
        PeerTransport.LOG.debug("rank {}: rank {} closed its session", rank, p);
        try {
            events.peerLeft(p);
        } catch (RuntimeException e) {
            PeerTransport.LOG.warn("rank {}: failure listener threw", rank, e);
        }
    }

    /**
     * A connection to {@code l.peer} came up: it is told every failure this rank announced so far (a notice sent while it
     * was being opened did not reach it). The peer ignores what it knows already.
     */
    void tellNewPeer(PeerLink l) {
        if (declaredFailed || t.isClosing()) return;
        int[] kinds = null;
        lock.lock();
        try {
            for (int p = 0; p < size; p++) {
                if (dead[p] && deadKind[p] != 0 && p != l.peer) {
                    if (kinds == null) kinds = new int[size];
                    kinds[p] = deadKind[p];
                }
            }
        } finally {
            lock.unlock();
        }
        if (kinds == null) return;
        for (int p = 0; p < size; p++) {
            if (kinds[p] != 0) l.sendFrame(Frame.FAILED, kinds[p], 0, p, 0, 0, null, null);
        }
    }

    PeerFailedException peerFailed(int peer, String what, Throwable cause) {
        PeerLink l = links[peer];
        String reason;
        lock.lock();
        try {
            reason = deadWhy[peer];
        } finally {
            lock.unlock();
        }
        String why = l.peerSaidBye ? "rank " + peer + " closed its session"
                : reason != null ? "rank " + peer + " failed (" + reason + ")" : "rank " + peer + " failed (connection lost)";
        return new PeerFailedException("rank " + rank + ": " + what + ": " + why, List.of(peer), cause);
    }

    /**
     * Records that world rank {@code p} failed ({@code kind}: a {@link Frame} FAIL_ constant): once per rank, tells
     * every connected peer (they forward it in turn), re-opens the ring of neighbour connections past it, and tells the
     * layer above. Not for ranks that closed in order.
     */
    private void noteDead(int p, String why, int kind) {
        if (markDead(p, why, kind)) announceDead(p, why, kind);
    }

    /** Tells the layer above and the connected peers that {@code p} failed (once, after {@link #markDead}). */
    private void announceDead(int p, String why, int kind) {
        tellAbove(p, why, kind);
        tellPeers(p, kind);
    }

    /** Tells the layer above that {@code p} failed (its communicators turn DEGRADED, their running collectives fail). */
    private void tellAbove(int p, String why, int kind) {
        // a broken connection or a protocol error was logged by the link already
        if (kind == Frame.FAIL_SILENT || kind == Frame.FAIL_REPORTED) PeerTransport.LOG.warn("rank {}: rank {} failed: {}", rank, p, why);
        PeerFailureEvent.commit(rank, p, why);
        try {
            events.peerFailed(p, why);
        } catch (RuntimeException e) {
            PeerTransport.LOG.warn("rank {}: failure listener threw", rank, e);
        }
    }

    /** Tells every connected peer that {@code p} failed (they forward it), and re-opens the neighbour ring past it. */
    private void tellPeers(int p, int kind) {
        if (!declaredFailed) {
            int forward = kind == Frame.FAIL_REPORTED ? Frame.FAIL_REPORTED : kind;
            for (PeerLink q : links) {
                // a link being re-established keeps the notice in its resend log
                PeerLink.State qs = q.state;
                if (q.peer != p && (qs == PeerLink.State.CONNECTED || qs == PeerLink.State.RECONNECTING)) {
                    q.sendFrame(Frame.FAILED, forward, 0, p, 0, 0, null, null);
                }
            }
            connectNeighbour();
        }
    }

    /** Fails the link to {@code p} whatever its state (connected or not) with {@code cause}. */
    private void failLink(int p, PeerLink.ReportedFailure cause) {
        PeerLink l = links[p];
        boolean idle;
        synchronized (l) {
            idle = l.state == PeerLink.State.IDLE || l.state == PeerLink.State.CONNECTING;
            if (idle) {
                l.state = PeerLink.State.FAILED;
                l.notifyAll();
            }
        }
        if (idle) linkFailed(l, cause, false);
        else l.fail(cause);
    }

    /** The watchdog heard nothing from the connected peer of {@code l} for {@code silentNanos}: it failed. */
    void onSilent(PeerLink l, long silentNanos) {
        if (t.isClosing() || l.state != PeerLink.State.CONNECTED) return;
        String why = "nothing came from it for " + silentNanos / 1_000_000 + " ms (HCOMM_HEARTBEAT_TIMEOUT "
                + t.heartbeatTimeoutNanos / 1_000_000 + " ms)";
        PeerLink.ReportedFailure silence = new PeerLink.ReportedFailure(why, Frame.FAIL_SILENT);
        if (l.mayReconnect(silence)) {
            // maybe only this connection is stuck (a link that went down and up, a lost route): replace it (the watchdog
            // suspects a reliable link after half the timeout); a peer that has not answered a new connection by the
            // time its silence reaches the heartbeat timeout is declared failed then, so detection stays within it
            // (less one shortest attempt: the attempt running at that moment may take that long to end)
            l.giveUpAt = System.nanoTime() + Math.max(Reconnector.MIN_ATTEMPT_NANOS, t.heartbeatTimeoutNanos - silentNanos - Reconnector.MIN_ATTEMPT_NANOS);
            l.lost(silence);
            return;
        }
        // the peer reads this if it ever runs again, and knows it was left out
        l.sendFrame(Frame.FAILED, Frame.FAIL_SILENT, 0, l.peer, 0, 0, null, null);
        noteDead(l.peer, why, Frame.FAIL_SILENT);
        l.fail(new PeerLink.ReportedFailure(why, Frame.FAIL_SILENT));
    }

    /** A FAILED notice from the peer of {@code from}: rank {@code p} failed, or (p == this rank) we were declared failed. */
    void onFailedNotice(PeerLink from, int p, int flags) {
        if (t.isClosing()) return;
        if (p == rank) {
            declaredFailedBy(from.peer, "rank " + from.peer + " declared this rank failed: " + Frame.failReason(flags));
            return;
        }
        if (p == from.peer) return; // nobody reports itself
        boolean known;
        lock.lock();
        try {
            known = dead[p];
        } finally {
            lock.unlock();
        }
        if (known) return;
        String why = "rank " + from.peer + " reports it failed: " + Frame.failReason(flags);
        noteDead(p, why, Frame.FAIL_REPORTED);
        failLink(p, new PeerLink.ReportedFailure(why, Frame.FAIL_REPORTED));
    }

    /** Another rank declared this one failed: it stops forwarding and reconnecting, its communicators become FAILED. */
    void declaredFailedBy(int by, String why) {
        if (declaredFailed) return;
        declaredFailed = true;
        PeerTransport.LOG.error("rank {}: {}; its communicators are unusable", rank, why);
        try {
            events.declaredFailed(by, why);
        } catch (RuntimeException e) {
            PeerTransport.LOG.warn("rank {}: failure listener threw", rank, e);
        }
    }

    /** Whether another rank declared this one failed. */
    boolean isDeclaredFailed() {
        return declaredFailed;
    }

    /** Whether world rank {@code p} is known to have failed. */
    boolean isDead(int p) {
        lock.lock();
        try {
            return dead[p];
        } finally {
            lock.unlock();
        }
    }

    /** See {@link PeerTransport#sendAbort}: connected peers are told at once, the others through a new connection. */
    void sendAbort(long commId, int[] worldRanks) {
        for (int p : worldRanks) {
            if (p == rank) continue;
            PeerLink l = links[p];
            if (l.state == PeerLink.State.CONNECTED && l.sendFrame(Frame.ABORT, 0, commId, rank, 0, 0, null, null)) continue;
            if (l.state == PeerLink.State.FAILED || l.state == PeerLink.State.CLOSED || t.isClosing()) continue;
            Thread.ofVirtual().name("hcomm-connect-" + rank).start(() -> {
                try {
                    long wait = Math.min(t.connections.connectTimeout().toNanos(), ABORT_CONNECT_MAX_NANOS);
                    t.connections.linkTo(p, System.nanoTime() + wait).sendFrame(Frame.ABORT, 0, commId, rank, 0, 0, null, null);
                } catch (io.hcomm4j.HcommException e) {
                    PeerTransport.LOG.debug("rank {}: could not tell rank {} of the abort: {}", rank, p, e.getMessage());
                }
            });
        }
    }

    /** See {@link PeerTransport#requestStatus}. */
    void requestStatus(int p) {
        if (p == rank || p < 0 || p >= size) return;
        PeerLink l = links[p];
        if (l.state == PeerLink.State.CONNECTED) l.sendFrame(Frame.STATUS_REQUEST, 0, 0, 0, 0, 0, null, null);
    }

    void onAbortNotice(PeerLink from, long commId) {
        if (t.isClosing()) return;
        try {
            events.abortNotice(commId, from.peer);
        } catch (RuntimeException e) {
            PeerTransport.LOG.warn("rank {}: abort listener threw", rank, e);
        }
    }

    void onStatusRequest(PeerLink from) {
        try {
            events.statusRequested(from.peer);
        } catch (RuntimeException e) {
            PeerTransport.LOG.warn("rank {}: status listener threw", rank, e);
        }
    }

    /** World ranks known to have failed (not those that closed in order), ascending. */
    List<Integer> failedRanks() {
        List<Integer> out = new ArrayList<>();
        lock.lock();
        try {
            for (int p = 0; p < size; p++) if (dead[p]) out.add(p);
        } finally {
            lock.unlock();
        }
        return out;
    }

    /** Why world rank {@code p} is known to have failed, or null. */
    String failureReason(int p) {
        lock.lock();
        try {
            return deadWhy[p];
        } finally {
            lock.unlock();
        }
    }

    /**
     * With heartbeats on: opens (in the background) the connection to the next live rank after this one, unless it is
     * open. Each rank doing so keeps the live ranks in a ring of connections, over which failure notices reach
     * everyone. With two live ranks only the lower one connects.
     */
    void connectNeighbour() {
        if (!t.heartbeats() || !neighbourRing || t.isClosing() || declaredFailed || size < 2) return;
        int next = -1;
        int live = 0;
        lock.lock();
        try {
            for (int i = 1; i < size; i++) {
                int p = (rank + i) % size;
                if (!dead[p]) {
                    live++;
                    if (next < 0) next = p;
                }
            }
        } finally {
            lock.unlock();
        }
        if (next < 0 || (live == 1 && next < rank)) return;
        if (links[next].state == PeerLink.State.IDLE) t.connections.connectInBackground(next);
    }
}
