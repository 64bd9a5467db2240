package io.hcomm4j.transport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SocketChannel;
import io.hcomm4j.security.Wire;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Re-establishing a reliable link whose connection was lost (HCOMM_RETRY_MAX &gt; 0 on both sides, over TCP): both sides
 * try to reconnect (the first attempt at once, then in windows twice as long each; when both attempts meet, the lower
 * rank's wins, as at the first connect), the hello says which connection it replaces and the last frame this side
 * received completely, and each side sends again what the other did not receive ({@link PeerLink#installResumed}). A
 * reconnect that is refused (nothing listens at the peer's address: its process is gone) fails the peer at once;
 * after {@code retryMax} attempts the peer is declared failed.
 */
final class Reconnector {
    /** Shortest time a reconnect attempt may take (connect, handshake, hello), whatever its window. */
    static final long MIN_ATTEMPT_NANOS = 50_000_000L;

    private final PeerTransport t;
    private final int rank;

    Reconnector(PeerTransport t, int rank) {
        this.t = t;
        this.rank = rank;
    }

    /** How one reconnect attempt ended. */
    private enum Attempt { INSTALLED, REJECTED, GONE, SUPERSEDED }

    /**
     * Starts re-establishing the connection of {@code l} (state RECONNECTING) on a virtual thread
     * ({@code hcomm-reconnect-<rank>}), unless one does already: one per link, for as long as it is RECONNECTING.
     */
    void reconnect(PeerLink l) {
        synchronized (l) {
            if (l.recovering || l.state != PeerLink.State.RECONNECTING || t.linksClosing()) return;
            l.recovering = true;
        }
        Thread.ofVirtual().name("hcomm-reconnect-" + rank).start(() -> {
            boolean clean = false;
            try {
                reconnectLoop(l);
                clean = true;
            } catch (RuntimeException e) {
                PeerTransport.LOG.warn("rank {}: re-establishing the connection to rank {} failed unexpectedly", rank, l.peer, e);
                l.fail(new IOException("re-establishing the connection failed: " + e, e));
            } finally {
                if (!clean) {
                    synchronized (l) {
                        l.recovering = false;
                    }
                }
            }
        });
    }

    /**
     * Attempts to re-establish the connection: the first at once, each in a window twice as long as the one before
     * (from HCOMM_RETRY_INTERVAL, at most 8 times it), the next one when the window ends; gives up after t.retryMax
     * attempts (the peer is declared failed) or at once when the connection is refused (nothing listens at the peer's
     * address any more: its process is gone) or the peer declared this rank failed. Ends when the link is no longer
     * RECONNECTING (an attempt of either side succeeded); a new loss starts the count again. Clears
     * {@code l.recovering} in the same critical section that decides to stop.
     */
    private void reconnectLoop(PeerLink l) {
        long incident = 0;
        int attempt = 0;
        long window = t.retryIntervalNanos;
        Exception last = null;
        // a link lost to silence must be back before the silence reaches the heartbeat timeout
        boolean silent = false;
        long giveUpAt = 0;
        boolean outOfTime = false;
        while (true) {
            synchronized (l) {
                if (l.state != PeerLink.State.RECONNECTING || t.linksClosing()) {
                    l.recovering = false;
                    return;
                }
                if (l.lostAt != incident) {
                    incident = l.lostAt;
                    attempt = 0;
                    window = t.retryIntervalNanos;
                    last = null;
                    silent = l.lossCause instanceof PeerLink.ReportedFailure rf && rf.kind == Frame.FAIL_SILENT && l.giveUpAt != 0;
                    giveUpAt = l.giveUpAt;
                }
                if (attempt >= t.retryMax) break;
                if (silent && attempt > 0 && System.nanoTime() - giveUpAt >= 0) {
                    outOfTime = true;
                    break;
                }
                attempt++;
                l.attempting = true;
            }
            long start = System.nanoTime();
            long end = silent && giveUpAt - (start + window) < 0 ? giveUpAt : start + window;
            Attempt outcome = Attempt.REJECTED;
            IOException refused = null;
            try {
                t.progress.withToken(l::detachRx);
                outcome = reconnectAttempt(l, Math.max(end, start + MIN_ATTEMPT_NANOS), attempt);
            } catch (IOException e) {
                last = e;
                if (isRefused(e)) refused = e;
            } finally {
                synchronized (l) {
                    l.attempting = false;
                    l.notifyAll();
                }
            }
            if (refused != null) {
                long stall = t.heartbeats() ? t.watchdog.recentStall(System.nanoTime(), Math.max(5_000_000_000L, 2 * t.heartbeatTimeoutNanos)) : 0;
                if (stall >= t.heartbeatTimeoutNanos && stall > 0) {
                    // this process could not run for longer than the heartbeat timeout (stopped, frozen): the peers took it
                    // for failed, gave up on it, and this one is gone (ended) since; the rank was left out, not the peer
                    String why = "this rank could not run for " + stall / 1_000_000 + " ms (longer than HCOMM_HEARTBEAT_TIMEOUT "
                            + t.heartbeatTimeoutNanos / 1_000_000 + " ms), and rank " + l.peer + " no longer takes connections ("
                            + refused.getMessage() + "): the others have declared this rank failed";
                    t.failures.declaredFailedBy(l.peer, why);
                    l.fail(new PeerLink.ReportedFailure(why, Frame.FAIL_REPORTED));
                } else {
                    // no listener at the peer's address: its process is gone (or it closed its session)
                    l.fail(new IOException("its connection broke (" + describe(l.lossCause) + ") and reconnecting was refused ("
                            + refused.getMessage() + "): its process is gone", refused));
                }
                finishLoop(l);
                return;
            }
            if (outcome == Attempt.INSTALLED) {
                long took = System.nanoTime() - incident;
                long ms = took / 1_000_000;
                Conduit now = l.ch;
                ConnectionEvent.commit(rank, l.peer, now == null ? "none" : now.kind(), true, attempt, l.epoch, took);
                PeerTransport.LOG.info("rank {}: re-established the connection to rank {} after {} ms ({} attempt{}, connection {}); "
                        + "{} frames ({} bytes) sent again", rank, l.peer, ms, attempt, attempt == 1 ? "" : "s", l.epoch,
                        l.lastResent, l.lastResentBytes);
                continue;
            }
            if (outcome == Attempt.GONE) {
                t.failures.declaredFailedBy(l.peer, "rank " + l.peer + " declared this rank failed (it refused to reconnect with it)");
                l.fail(new PeerLink.ReportedFailure("rank " + l.peer + " declared this rank failed", Frame.FAIL_REPORTED));
                finishLoop(l);
                return;
            }
            if (outcome == Attempt.REJECTED && last == null) last = new IOException("the attempt was turned down (rank " + l.peer + " keeps its own)");
            // wait for the end of the window, or until the link changes (the peer's attempt was accepted here)
            synchronized (l) {
                long left;
                while (l.state == PeerLink.State.RECONNECTING && l.lostAt == incident && !t.linksClosing()
                        && (left = end - System.nanoTime()) > 0) {
                    try {
                        l.wait(Math.max(1, left / 1_000_000));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
            }
            window = Math.min(window * 2, 8 * t.retryIntervalNanos);
        }
        long ms = (System.nanoTime() - incident) / 1_000_000;
        int kind = l.lossCause instanceof PeerLink.ReportedFailure rf ? rf.kind : Frame.FAIL_LOST;
        String why = describe(l.lossCause) + "; " + attempt + " attempt" + (attempt == 1 ? "" : "s") + " to reconnect in "
                + ms + " ms failed (" + (outOfTime ? "no answer before the silence reached HCOMM_HEARTBEAT_TIMEOUT"
                : "HCOMM_RETRY_MAX " + t.retryMax) + ", last: " + describe(last) + ")";
        // a silent peer is logged when announced, a lost connection by the link
        l.fail(kind == Frame.FAIL_SILENT ? new PeerLink.ReportedFailure(why, kind) : new IOException(why));
        finishLoop(l);
    }

    /** A connect that was refused (ECONNREFUSED: nothing listens at the address), not one that timed out or found no route. */
    private static boolean isRefused(IOException e) {
        return e instanceof java.net.ConnectException && e.getMessage() != null && e.getMessage().contains("refused");
    }

    private static void finishLoop(PeerLink l) {
        synchronized (l) {
            l.recovering = false;
        }
    }

    private static String describe(Exception e) {
        if (e == null) return "none";
        if (e instanceof PeerLink.ReportedFailure) return e.getMessage();
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    /** One reconnect attempt: connect, handshake, hello, and if accepted install the new connection; by {@code end}. */
    private Attempt reconnectAttempt(PeerLink l, long end, int attempt) throws IOException {
        ShmOptions so = t.shm();
        ShmConduit.Mapping offer = t.connections.ringOffer(l.peer);
        boolean[] used = new boolean[1];
        try {
            return reconnectAttempt(l, end, attempt, offer, used);
        } finally {
            Connections.dropOffer(so, offer, used[0]);
        }
    }

    private Attempt reconnectAttempt(PeerLink l, long end, int attempt, ShmConduit.Mapping offer, boolean[] used)
            throws IOException {
        int peer = l.peer;
        // with several interfaces, the attempts go over each in turn: the primary link survives the loss of its own
        InetSocketAddress[] route = offer == null ? t.rails.reconnectRoute(peer, attempt) : null;
        InetSocketAddress addr = route != null ? route[1] : t.connections.addressOf(peer);
        byte[] offerName = offer == null ? new byte[0] : offer.name().getBytes(StandardCharsets.US_ASCII);
        long resume = l.rxDone();
        long epoch;
        synchronized (l) {
            epoch = l.epoch;
        }
        SocketChannel ch = SocketChannel.open();
        l.attemptChannel = ch;
        boolean keep = false;
        try {
            if (t.linksClosing() || l.state != PeerLink.State.RECONNECTING) return Attempt.SUPERSEDED;
            if (t.unreachable) throw new java.net.NoRouteToHostException("no route to " + addr + " (test hook)");
            if (route != null) ch.bind(route[0]);
            ch.socket().connect(addr, millisLeft(end));
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            Wire w = t.connections.authenticate(ch, java.time.Duration.ofMillis(millisLeft(end)));
            t.connections.writeHello(w, peer, offerName, epoch, resume);
            w.readTimeout(millisLeft(end));
            HelloDescriptor.Answer a = HelloDescriptor.readAnswer(w.in(), peer);
            if (a.code() == HelloDescriptor.REJECT) return Attempt.REJECTED;
            if (a.code() == HelloDescriptor.GONE) return Attempt.GONE;
            if (!a.reliable()) throw new IOException("rank " + peer + " accepted a reconnect but does not resend");
            Conduit conduit = offer != null && a.peerPrefix() != null
                    ? ShmConduit.of(l, t.progress, w, offer, true, t.shm().dir(), a.peerPrefix())
                    : new SocketConduit(w, l, t.progress, t.congestion);
            used[0] = conduit instanceof ShmConduit;
            Object[] result = new Object[1];
            t.progress.withToken(() -> {
                synchronized (l) {
                    // the receive side must not have moved since the hello said where to resume
                    if (t.linksClosing() || l.state != PeerLink.State.RECONNECTING || l.rxDone() != resume) return;
                    try {
                        result[0] = l.installResumed(conduit, a.epoch(), a.resume());
                    } catch (IOException e) {
                        result[0] = e;
                    }
                }
            });
            if (result[0] instanceof List<?> done) {
                keep = true;
                for (Object s : done) ((SendRequest) s).succeed(null);
                return Attempt.INSTALLED;
            }
            Connections.discard(conduit);
            if (result[0] instanceof PeerLink.ProtocolException pe) {
                PeerTransport.LOG.warn("rank {}: cannot resume the connection to rank {}: {}", rank, peer, pe.getMessage());
                l.fail(pe);
            }
            return Attempt.SUPERSEDED;
        } finally {
            l.attemptChannel = null;
            if (!keep) Connections.closeQuietly(ch);
        }
    }

    private static int millisLeft(long end) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (end - System.nanoTime()) / 1_000_000));
    }

    /** Waits until no link is RECONNECTING any more (reconnected or failed), or until {@code deadline}. */
    void awaitReconnecting(long deadline) {
        for (PeerLink l : t.links()) {
            synchronized (l) {
                long left;
                while (l.state == PeerLink.State.RECONNECTING && (left = deadline - System.nanoTime()) > 0) {
                    try {
                        l.wait(Math.max(1, left / 1_000_000));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        }
    }

    /** The longest a lost connection is being re-established before its peer is declared failed: the sum of the attempt windows. */
    long retryBudgetNanos() {
        long sum = 0, window = t.retryIntervalNanos;
        for (int k = 0; k < t.retryMax; k++) {
            sum += Math.max(window, MIN_ATTEMPT_NANOS);
            window = Math.min(window * 2, 8 * t.retryIntervalNanos);
        }
        return sum;
    }

    /**
     * Whether a reconnect from {@code src} that replaces its connection {@code helloEpoch} is taken now (progress token
     * and monitor of {@code l} held): not from a rank declared failed (HelloDescriptor.GONE); not one that started before the connection
     * we have now (its epoch is older); not while our own attempt runs and we are the lower rank (ours wins, as at the
     * first connect).
     */
    private byte reconnectVerdict(PeerLink l, int src, long helloEpoch, boolean peerReliable) {
        if (t.linksClosing() || t.unreachable) return HelloDescriptor.REJECT;
        return switch (l.state) {
            case FAILED -> t.failures.isDead(src) ? HelloDescriptor.GONE : HelloDescriptor.REJECT;
            case CONNECTED -> l.reliable && peerReliable && helloEpoch >= l.epoch ? HelloDescriptor.ACCEPT : HelloDescriptor.REJECT;
            case RECONNECTING -> peerReliable && !(l.attempting && rank < src) ? HelloDescriptor.ACCEPT : HelloDescriptor.REJECT;
            default -> HelloDescriptor.REJECT;
        };
    }

    /**
     * {@code src} re-establishes the connection that replaces its connection {@code helloEpoch} and has every frame of
     * ours up to {@code peerResume}. If taken ({@link #reconnectVerdict}), ours (if it still looked alive) is dropped,
     * the receive side rolled back, the answer says where we resume, and the new connection goes in with what the peer
     * lacks queued first; all under the progress token and the link's monitor. True if the rings are used.
     */
    boolean acceptReconnect(Wire ch, PeerLink l, int src, long helloEpoch, long peerResume, boolean peerReliable,
                                    ShmConduit.Mapping mapped, String peerPrefix, ShmOptions so) throws IOException {
        byte[] verdict = new byte[1];
        boolean[] used = new boolean[1];
        Object[] result = new Object[1];
        t.progress.withToken(() -> {
            synchronized (l) {
                Conduit conduit = null;
                try {
                    byte v = reconnectVerdict(l, src, helloEpoch, peerReliable);
                    if (v == HelloDescriptor.ACCEPT && !l.canResumeFrom(peerResume)) {
                        // the hello was made before the peer received (and acknowledged) more: a late attempt, not ours to take
                        PeerTransport.LOG.debug("rank {}: turned down a late reconnect from rank {} (resume point {})", rank, src, peerResume);
                        v = HelloDescriptor.REJECT;
                    }
                    verdict[0] = v;
                    if (v != HelloDescriptor.ACCEPT) {
                        HelloDescriptor.writeRefusal(ch, v);
                        return;
                    }
                    if (l.state == PeerLink.State.CONNECTED) {
                        l.detach(new IOException("rank " + src + " re-established the connection (connection " + l.epoch + " broke on its side)"));
                    }
                    l.detachRx();
                    long newEpoch = Math.max(l.epoch, helloEpoch) + 1;
                    t.connections.writeAccept(ch, mapped != null, newEpoch, l.rxDone());
                    conduit = mapped != null ? ShmConduit.of(l, t.progress, ch, mapped, false, so.dir(), peerPrefix)
                            : new SocketConduit(ch, l, t.progress, t.congestion);
                    used[0] = mapped != null;
                    result[0] = l.installResumed(conduit, newEpoch, peerResume);
                } catch (IOException e) {
                    result[0] = e;
                    if (conduit != null) t.connections.retire(conduit);
                }
            }
        });
        if (result[0] instanceof List<?> done) {
            for (Object s : done) ((SendRequest) s).succeed(null);
            PeerTransport.LOG.info("rank {}: rank {} re-established the connection (connection {}); {} frames ({} bytes) sent again", rank, src,
                    l.epoch, l.lastResent, l.lastResentBytes);
            return used[0];
        }
        if (result[0] instanceof PeerLink.ProtocolException pe) {
            Connections.closeQuietly(ch.channel());
            PeerTransport.LOG.warn("rank {}: cannot resume the connection to rank {}: {}", rank, src, pe.getMessage());
            l.fail(pe);
            return used[0];
        }
        if (result[0] instanceof IOException e) {
            // the answer did not get through: ours is gone too now, so this side re-establishes it as well
            Connections.closeQuietly(ch.channel());
            reconnect(l);
            throw e;
        }
        if (verdict[0] == HelloDescriptor.REJECT) PeerTransport.LOG.debug("rank {}: turned down a reconnect from rank {} (state {})", rank, src, l.state);
        return used[0];
    }
}
