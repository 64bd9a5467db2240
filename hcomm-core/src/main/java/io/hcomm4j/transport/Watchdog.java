package io.hcomm4j.transport;

import java.util.concurrent.locks.LockSupport;

/**
 * The transport's watchdog thread ({@code hcomm-watchdog-<rank>}): every half heartbeat interval it sends a HEARTBEAT on
 * each connection that carried nothing since its previous look (so an idle connection carries a frame at least every
 * interval), declares failed a connected peer from which no byte arrived for
 * the heartbeat timeout, and gives the layer above its tick (stuck-op reports). It never takes part in moving data, so
 * user work, a long reduction or a blocked op never delays a heartbeat; it only ever try-locks a link.
 *
 * <p><b>Not counting our own stalls.</b> Silence is only held against a peer while this rank could have heard it: time
 * during which the watchdog itself did not run (the process was stopped, descheduled, or in a long GC pause) or during
 * which nobody polled the connections (a completion callback held the poller) is credited back to every peer. So a rank
 * that was stopped and continues does not declare everyone else failed.
 *
 * <p><b>Timing.</b> The tick is a quarter of the interval, at most 250 ms. A peer is declared failed once its silence
 * reaches the timeout less two ticks (its last bytes are noticed up to a tick late, and the check runs once a tick), so
 * it is declared within the timeout of its last frame; with the interval at most a third of the timeout, a live peer
 * has sent at least two heartbeats within that silence. A reliable link (reconnects on) is suspected after half the
 * timeout (at least two intervals) and its connection replaced; if the peer has not answered a new one by the time its
 * silence reaches the timeout, it is declared failed then: within the timeout as well.
 */
final class Watchdog implements AutoCloseable {
    /** Longest tick. */
    private static final long MAX_TICK = 250_000_000L;
    /** Tick when heartbeats are off (only the layer above's tick). */
    private static final long IDLE_TICK = 250_000_000L;
    /** Polls that did not advance for this long mean nobody reads the connections: not the peers' fault. */
    private static final long POLLER_STALL = 500_000_000L;

    private final PeerTransport t;
    private final Thread thread;
    private final long tick;
    private final long threshold;
    /** Silence after which a reliable link is replaced (half the timeout): the new one must be there by the timeout. */
    private final long suspect;
    private volatile boolean closed;
    /** When the watchdog last ran, and the last time it found it had not run for more than two ticks (and for how long). */
    private volatile long lastTickAt = System.nanoTime();
    private volatile long lastStall;
    private volatile long lastStallAt;
    // per peer, watchdog thread only
    private final boolean[] watched;
    private final long[] rxSeen;
    private final long[] heardAt;

    Watchdog(PeerTransport t) {
        this.t = t;
        int n = t.size;
        this.watched = new boolean[n];
        this.rxSeen = new long[n];
        this.heardAt = new long[n];
        if (t.heartbeats()) {
            this.tick = Math.max(1_000_000L, Math.min(MAX_TICK, t.heartbeatIntervalNanos / 4));
            this.threshold = Math.max(t.heartbeatIntervalNanos * 2, t.heartbeatTimeoutNanos - 2 * tick);
            this.suspect = Math.min(threshold, Math.max(t.heartbeatIntervalNanos * 2, t.heartbeatTimeoutNanos / 2));
        } else {
            this.tick = IDLE_TICK;
            this.threshold = Long.MAX_VALUE;
            this.suspect = Long.MAX_VALUE;
        }
        this.thread = Thread.ofPlatform().daemon().name("hcomm-watchdog-" + t.rank).unstarted(this::run);
    }

    void start() {
        thread.start();
    }

    private void run() {
        long last = System.nanoTime();
        long nextBeat = last;
        int pollsSeen = t.progress.polls();
        long pollsMovedAt = last;
        while (!closed) {
            LockSupport.parkNanos(tick);
            if (closed) break;
            long now = System.nanoTime();
            long gap = now - last;
            last = now;
            if (gap > 2 * tick) {
                lastStall = gap;
                lastStallAt = now;
            }
            lastTickAt = now;
            // time this rank could not have heard anybody: not held against the peers
            long credit = gap > 2 * tick ? gap - tick : 0;
            int polls = t.progress.polls();
            if (polls != pollsSeen) {
                pollsSeen = polls;
                pollsMovedAt = now;
            } else if (now - pollsMovedAt > POLLER_STALL) {
                credit = gap;
            }
            try {
                boolean beat = false;
                if (t.heartbeats()) {
                    if (now - nextBeat >= 0) {
                        // looked at every half interval, a link that sent nothing since the last look gets a heartbeat:
                        // so at most an interval passes between two frames on an idle link
                        nextBeat = now + t.heartbeatIntervalNanos / 2;
                        for (PeerLink l : t.links()) l.heartbeatIfIdle();
                        beat = true;
                    }
                    checkLiveness(now, credit);
                }
                // a stalled rail is found even without heartbeats; a silent one with them (after what a reliable link gets)
                t.rails.tick(now, beat, credit > 0 ? -1 : t.heartbeats() ? suspect : 0);
                t.events().tick(now);
            } catch (RuntimeException e) {
                PeerTransport.LOG.warn("rank {}: watchdog: unexpected failure", t.rank, e);
            }
        }
    }

    private void checkLiveness(long now, long credit) {
        for (PeerLink l : t.links()) {
            int p = l.peer;
            if (l.state != PeerLink.State.CONNECTED) {
                watched[p] = false;
                continue;
            }
            long rx = l.rxProgress();
            if (!watched[p] || rx != rxSeen[p]) {
                watched[p] = true;
                rxSeen[p] = rx;
                heardAt[p] = now;
                continue;
            }
            heardAt[p] = Math.min(now, heardAt[p] + credit);
            long silent = now - heardAt[p];
            if (silent >= (l.reliable ? suspect : threshold)) t.failures.onSilent(l, silent);
        }
    }

    /**
     * How long this process could not run lately (stopped, starved, paused): the time since the watchdog's last tick if
     * that is overdue now (it has not run since), else the last long gap it found within {@code windowNanos}; 0 if none.
     */
    long recentStall(long now, long windowNanos) {
        long overdue = now - lastTickAt;
        if (overdue > 2 * tick) return overdue;
        return now - lastStallAt <= windowNanos ? lastStall : 0;
    }

    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(thread);
        if (thread.isAlive() && thread != Thread.currentThread()) {
            try {
                thread.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
