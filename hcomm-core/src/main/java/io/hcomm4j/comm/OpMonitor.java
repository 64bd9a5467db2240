package io.hcomm4j.comm;

import io.hcomm4j.Health;
import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.monitor.RankStatus;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.PendingOp;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stuck-op reports and the published state of one session, driven by the transport watchdog's tick.
 *
 * <p>Every scan (a few per {@code HCOMM_STUCK_REPORT}, at most one a second) looks at the collectives that run on each
 * communicator (their start time, op, size and the peers their pending sends and receives wait for) and at the
 * point-to-point ops the transport holds. An op that has waited longer than the limit is logged once at WARN, the peers
 * it waits for are asked (a STATUS_REQUEST frame) to publish their state, and this rank publishes its own
 * ({@link RankStatus}) in the store. It publishes again when the last stuck op ends, when a communicator's health changes
 * or when a peer asks. The store write runs on a virtual thread, one at a time, so a slow or dead store never delays the
 * watchdog (and so heartbeats).
 */
final class OpMonitor {
    private static final Logger LOG = LoggerFactory.getLogger(OpMonitor.class);

    private final Session session;
    private final PeerTransport transport;
    private final Store store;
    private final String key;
    private final int rank;
    private final int worldSize;
    private final long stuckNanos;
    private final long scanEvery;
    private long nextScan;
    private boolean hadStuck;
    /** Publish at the next tick: a health change, or a peer asked. */
    private volatile boolean dirty;
    private volatile boolean closed;
    private final AtomicBoolean publishing = new AtomicBoolean();
    private volatile RankStatus pending;
    private final long pid = ProcessHandle.current().pid();
    private final String host = hostName();

    OpMonitor(Session session, PeerTransport transport, Store store, String namespace, int rank, int worldSize, long stuckNanos) {
        this.session = session;
        this.transport = transport;
        this.store = store;
        this.key = RankStatus.key(namespace, rank);
        this.rank = rank;
        this.worldSize = worldSize;
        this.stuckNanos = stuckNanos;
        this.scanEvery = Math.max(50_000_000L, Math.min(1_000_000_000L, stuckNanos / 4));
        this.agreement = new StuckAgreement(store, namespace, rank, stuckNanos);
    }

    /** Stuck transport collectives compare fingerprints with the ranks they wait for. */
    private final StuckAgreement agreement;

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    boolean enabled() {
        return stuckNanos > 0;
    }

    /** Something an operator would want to see changed (health), or a peer with a stuck op asked: publish soon. */
    void requestPublish() {
        if (enabled()) dirty = true;
    }

    /** The watchdog's tick. */
    void tick(long now) {
        if (!enabled() || closed) return;
        boolean publish = dirty;
        if (now - nextScan >= 0) {
            nextScan = now + scanEvery;
            boolean fresh = scan(now);
            if (fresh || (hadStuck && !stuck)) publish = true;
            hadStuck = stuck;
        }
        if (publish) {
            dirty = false;
            publish(snapshot(now));
        }
    }

    private boolean stuck;

    /** Logs ops that became stuck since the last scan and asks their peers for their state; true if there were any. */
    private boolean scan(long now) {
        boolean fresh = false;
        boolean any = false;
        for (CommunicatorImpl c : session.communicators()) {
            for (TransportLinks l : c.running()) {
                long waited = now - l.startNanos;
                if (waited >= agreement.after && l.aborted() == null) agreement.check(l, l.waitingFor());
                if (waited < stuckNanos || l.aborted() != null) continue;
                any = true;
                if (l.reported) continue;
                l.reported = true;
                fresh = true;
                int[] peers = l.waitingFor();
                LOG.warn("rank {}: {} #{} on communicator {} ({}) has run for {} and {} (HCOMM_STUCK_REPORT {})", rank, l.op(), l.seq(),
                        Long.toHexString(c.id()), l.bytes < 0 ? "size unknown" : l.bytes + " bytes", seconds(waited),
                        peers.length == 0 ? "waits for no rank (it computes, or waits for its own caller)"
                                : "still waits for " + ranks(c, peers),
                        seconds(stuckNanos));
                StuckOpEvent.commit(l.op(), c.id(), rank, l.seq(), waited, ranks(c, peers));
                for (int p : peers) transport.requestStatus(p);
            }
            ZeroCopyEngine.Wait zw = c.zeroCopyWait();
            if (zw != null && now - zw.sinceNanos() >= stuckNanos) {
                any = true;
                ZeroCopyEngine z = c.zeroCopyEngine();
                if (z != null && z.reportedSeq != zw.seq()) {
                    z.reportedSeq = zw.seq();
                    fresh = true;
                    LOG.warn("rank {}: {} #{} on communicator {} ({}) has run for {} and {} (HCOMM_STUCK_REPORT {})", rank, zw.op(), zw.seq(),
                            Long.toHexString(c.id()), zw.bytes() < 0 ? "size unknown" : zw.bytes() + " bytes", seconds(now - zw.sinceNanos()),
                            zw.worldPeers().length == 0 ? "waits for no rank" : "still waits for " + ranks(c, zw.worldPeers()) + " (shared memory)",
                            seconds(stuckNanos));
                    StuckOpEvent.commit(zw.op(), c.id(), rank, zw.seq(), now - zw.sinceNanos(), ranks(c, zw.worldPeers()));
                    for (int p : zw.worldPeers()) transport.requestStatus(p);
                }
            }
        }
        boolean freshWait = false;
        for (PendingOp op : transport.pendingOps(now, stuckNanos)) {
            any = true;
            if (!op.firstTime()) continue;
            fresh = true;
            LOG.warn("rank {}: {} on communicator {} has waited {} (HCOMM_STUCK_REPORT {})", rank, op.description(),
                    Long.toHexString(op.commId()), seconds(op.waited()), seconds(stuckNanos));
            StuckOpEvent.commit(op.kind(), op.commId(), rank, op.tag(), op.waited(), op.peer() >= 0 ? "rank " + op.peer() : "any rank");
            if (op.peer() >= 0) {
                transport.requestStatus(op.peer());
                freshWait = true;
            }
        }
        if (freshWait) lookForDeadlock();
        stuck = any;
        return fresh;
    }

    private final AtomicBoolean diagnosing = new AtomicBoolean();

    /**
     * A point-to-point op just became stuck waiting for a rank: on a virtual thread (it reads the store for seconds),
     * find out whether the waits close a cycle, and if so say so at WARN with what to change.
     */
    private void lookForDeadlock() {
        if (!diagnosing.compareAndSet(false, true)) return;
        Thread.ofVirtual().name("hcomm-diagnose-" + rank).start(() -> {
            try {
                String why = session.explainWait(Long.MAX_VALUE); // however short HCOMM_STUCK_REPORT is
                if (why.contains("a likely deadlock")) LOG.warn("rank {}: the ops above wait in a cycle{}", rank, why);
            } catch (RuntimeException e) {
                LOG.debug("rank {}: could not look for a deadlock: {}", rank, e.toString());
            } finally {
                diagnosing.set(false);
            }
        });
    }

    private static String ranks(CommunicatorImpl c, int[] worldPeers) {
        StringBuilder sb = new StringBuilder(worldPeers.length == 1 ? "rank " : "ranks ");
        boolean sub = c.id() != 0;
        for (int i = 0; i < worldPeers.length; i++) {
            if (i > 0) sb.append(", ");
            sb.append(c.commRank(worldPeers[i]));
            if (sub) sb.append(" (world ").append(worldPeers[i]).append(')');
        }
        return sb.toString();
    }

    private static String seconds(long nanos) {
        return io.hcomm4j.Units.duration(nanos);
    }

    /** This rank's state now. */
    RankStatus snapshot(long now) {
        Collection<CommunicatorImpl> comms = session.communicators();
        List<RankStatus.Comm> cs = new ArrayList<>();
        List<RankStatus.Op> ops = new ArrayList<>();
        Health.State worst = Health.State.READY;
        String reason = "";
        for (CommunicatorImpl c : comms) {
            cs.add(new RankStatus.Comm(c.id(), c.size(), c.rank(), c.collectivesCalled()));
            Health h = c.health();
            if (h.state().compareTo(worst) > 0) {
                worst = h.state();
                reason = h.reason();
            }
            for (TransportLinks l : c.running()) {
                long waited = now - l.startNanos;
                List<Integer> peers = new ArrayList<>();
                for (int p : l.waitingFor()) peers.add(p);
                ops.add(new RankStatus.Op(c.id(), l.op(), true, l.seq(), l.bytes, waited / 1_000_000, peers, waited >= stuckNanos));
            }
            ZeroCopyEngine.Wait zw = c.zeroCopyWait();
            if (zw != null) {
                long waited = now - zw.sinceNanos();
                List<Integer> peers = new ArrayList<>();
                for (int p : zw.worldPeers()) peers.add(p);
                ops.add(new RankStatus.Op(c.id(), zw.op(), true, zw.seq(), zw.bytes(), waited / 1_000_000, peers, waited >= stuckNanos));
            }
        }
        // every point-to-point op, stuck or not: a peer that asks may be finding out whether the two wait for each other
        for (PendingOp op : transport.pendingOpsNow(now)) {
            ops.add(new RankStatus.Op(op.commId(), op.kind(), false, op.tag(), op.bytes(), op.waited() / 1_000_000,
                    op.peer() >= 0 ? List.of(op.peer()) : List.of(), op.waited() >= stuckNanos));
        }
        return new RankStatus(rank, worldSize, pid, host, System.currentTimeMillis(), worst.name(), transport.failedRanks(), reason, cs, ops);
    }

    /** Writes {@code status} to the store on a virtual thread; while one write runs, the latest status waits for it. */
    private void publish(RankStatus status) {
        pending = status;
        if (!publishing.compareAndSet(false, true)) return;
        Thread.ofVirtual().name("hcomm-status-" + rank).start(() -> {
            try {
                RankStatus s;
                while (!closed && (s = pending) != null) {
                    pending = null;
                    try {
                        store.set(key, s.encode().getBytes(StandardCharsets.UTF_8));
                    } catch (RuntimeException e) {
                        LOG.debug("rank {}: cannot publish its status: {}", rank, e.toString());
                        return;
                    }
                }
            } finally {
                publishing.set(false);
            }
            RankStatus late = pending;
            if (late != null && !closed) publish(late);
        });
    }

    void close() {
        closed = true;
    }
}
