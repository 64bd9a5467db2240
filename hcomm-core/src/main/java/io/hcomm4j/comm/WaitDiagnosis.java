package io.hcomm4j.comm;

import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.monitor.RankStatus;
import io.hcomm4j.Units;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.PendingOp;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Why this rank's point-to-point waits do not progress, in words for a timeout message or a stuck-op report: which of
 * its ops wait for which rank, what those ranks are doing by the status they publish in the store when asked (see
 * {@link OpMonitor}), and whether the waits close a cycle back to this rank: a likely deadlock, with what to change.
 *
 * <p>It asks the ranks it waits for to publish, waits for their new status (a bounded wait per step), and follows the
 * ranks those wait for in turn, at most {@link #MAX_STEPS} steps. It runs on the thread whose wait ended, never on a
 * transport thread.
 */
final class WaitDiagnosis {
    /** How long one step waits for the asked ranks' new status, and all steps together. */
    private static final long ASK_WAIT_NANOS = 1_500_000_000L;
    private static final long TOTAL_WAIT_NANOS = 5_000_000_000L;
    private static final long POLL_MILLIS = 20;
    private static final int MAX_STEPS = 8;

    /** One wait of one rank: in {@code kind} ("send", "recv", "probe") on {@code peer} (a world rank, -1: any). */
    private record Wait(String kind, int peer, long tag, long bytes, long waitedMillis) {
        String text() {
            String dir = kind.equals("send") ? " to " : " from ";
            return kind + dir + (peer < 0 ? "any rank" : "rank " + peer) + " (tag " + (tag < 0 ? "any" : String.valueOf(tag))
                    + (bytes > 0 ? ", " + Units.bytes(bytes) : "") + ") for " + Units.duration(waitedMillis * 1_000_000);
        }
    }

    private final PeerTransport transport;
    private final Store store;
    private final String namespace;
    private final int rank;
    private final long eagerLimit;
    /** The last explanation that found something, and when (a wait that ended meanwhile may borrow it). */
    private volatile String last = "";
    private volatile long lastAt;

    WaitDiagnosis(PeerTransport transport, Store store, String namespace, int rank, long eagerLimit) {
        this.transport = transport;
        this.store = store;
        this.namespace = namespace;
        this.rank = rank;
        this.eagerLimit = eagerLimit;
    }

    /**
     * "rank 0 waits in send to rank 1 (tag 0, 64.0 MiB) for 3.0 s; rank 1 waits in send to rank 0 ...: a likely deadlock:
     * ...", or "" when this rank waits in no point-to-point op.
     */
    String explain() {
        Map<Integer, List<Wait>> waits = new LinkedHashMap<>();
        List<Wait> mine = new ArrayList<>();
        for (PendingOp op : transport.pendingOpsNow(System.nanoTime())) {
            mine.add(new Wait(op.kind(), op.peer(), op.tag(), op.bytes(), op.waited() / 1_000_000));
        }
        if (mine.isEmpty()) return "";
        waits.put(rank, mine);
        Map<Integer, String> silent = new HashMap<>();
        List<Integer> cycle = null;
        long end = System.nanoTime() + TOTAL_WAIT_NANOS;
        for (int step = 0; step < MAX_STEPS && cycle == null && System.nanoTime() - end < 0; step++) {
            List<Integer> ask = new ArrayList<>();
            for (List<Wait> ws : waits.values()) {
                for (Wait w : ws) if (w.peer() >= 0 && !waits.containsKey(w.peer()) && !silent.containsKey(w.peer()) && !ask.contains(w.peer())) ask.add(w.peer());
            }
            if (ask.isEmpty()) break;
            Map<Integer, RankStatus> got;
            try {
                got = ask(ask, Math.min(System.nanoTime() + ASK_WAIT_NANOS, end));
            } catch (RuntimeException storeGone) {
                for (int p : ask) silent.put(p, "what rank " + p + " does is not known: the store cannot be read (" + storeGone.getMessage() + ")");
                break;
            }
            for (int p : ask) {
                RankStatus s = got.get(p);
                if (s == null) {
                    silent.put(p, "rank " + p + " published no status when asked (is its process stopped, or is HCOMM_STUCK_REPORT 0 there?)");
                    continue;
                }
                List<Wait> ws = new ArrayList<>();
                for (RankStatus.Op o : s.ops()) {
                    if (o.collective()) continue;
                    ws.add(new Wait(o.kind(), o.waitingFor().isEmpty() ? -1 : o.waitingFor().get(0), o.seq(), o.bytes(), o.waitedMillis()));
                }
                if (ws.isEmpty()) {
                    String doing = s.ops().isEmpty() ? "no op (it runs its own code)" : s.ops().get(0).kind() + " #" + s.ops().get(0).seq();
                    silent.put(p, "rank " + p + " waits in no point-to-point op: it runs " + doing);
                } else {
                    waits.put(p, ws);
                }
            }
            cycle = cycle(waits);
        }
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<Integer, List<Wait>> e : waits.entrySet()) {
            if (!sb.isEmpty()) sb.append("; ");
            sb.append("rank ").append(e.getKey()).append(" waits in ");
            List<Wait> ws = e.getValue();
            for (int i = 0; i < ws.size() && i < 3; i++) sb.append(i > 0 ? ", " : "").append(ws.get(i).text());
            if (ws.size() > 3) sb.append(" and ").append(ws.size() - 3).append(" more");
        }
        for (String s : silent.values()) sb.append("; ").append(s);
        if (cycle != null) sb.append(": ").append(verdict(cycle, waits));
        lastAt = System.nanoTime();
        last = sb.toString();
        return last;
    }

    /**
     * The last explanation, if it was made within {@code maxAgeNanos}: for a wait whose op another thread explained and
     * withdrew meanwhile (a stream's synchronize and the worker running its op time out together), else "".
     */
    String recent(long maxAgeNanos) {
        String l = last;
        return !l.isEmpty() && System.nanoTime() - lastAt <= maxAgeNanos ? l : "";
    }

    /** Asks {@code ranks} to publish and returns each one's status published after the request (absent: none came). */
    private Map<Integer, RankStatus> ask(List<Integer> ranks, long deadline) {
        Map<Integer, byte[]> before = new HashMap<>();
        for (int p : ranks) before.put(p, store.tryGet(RankStatus.key(namespace, p)));
        for (int p : ranks) transport.requestStatus(p);
        Map<Integer, RankStatus> got = new HashMap<>();
        while (got.size() < ranks.size() && System.nanoTime() - deadline < 0) {
            for (int p : ranks) {
                if (got.containsKey(p)) continue;
                byte[] now = store.tryGet(RankStatus.key(namespace, p));
                if (now == null || Arrays.equals(now, before.get(p))) continue;
                try {
                    got.put(p, RankStatus.decode(new String(now, StandardCharsets.UTF_8)));
                } catch (IllegalArgumentException garbled) {
                    // not a status: as if none came
                }
            }
            if (got.size() < ranks.size()) {
                try {
                    Thread.sleep(POLL_MILLIS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        return got;
    }

    /** A cycle of waits from this rank back to it (each rank's first wait on a given rank), or null. */
    private List<Integer> cycle(Map<Integer, List<Wait>> waits) {
        List<Integer> path = new ArrayList<>();
        return follow(rank, waits, path) ? path : null;
    }

    private boolean follow(int r, Map<Integer, List<Wait>> waits, List<Integer> path) {
        if (path.contains(r)) return r == rank && path.size() > 1;
        List<Wait> ws = waits.get(r);
        if (ws == null) return false;
        path.add(r);
        for (Wait w : ws) {
            if (w.peer() >= 0 && follow(w.peer(), waits, path)) return true;
        }
        path.remove(path.size() - 1);
        return false;
    }

    /** What the cycle means and what to change. */
    private String verdict(List<Integer> cycle, Map<Integer, List<Wait>> waits) {
        boolean allSends = true;
        boolean allRecvs = true;
        for (int i = 0; i < cycle.size(); i++) {
            int next = cycle.get((i + 1) % cycle.size());
            for (Wait w : waits.get(cycle.get(i))) {
                if (w.peer() != next) continue;
                allSends &= w.kind().equals("send");
                allRecvs &= !w.kind().equals("send");
            }
        }
        String who = "ranks " + cycle.toString().replaceAll("[\\[\\]]", "").replace(", ", " -> ") + " -> " + cycle.get(0);
        if (allSends) {
            return "a likely deadlock: " + who + " each wait in a send for the next to post its receive, and none does (a "
                    + "message above HCOMM_EAGER_LIMIT, " + Units.bytes(eagerLimit) + ", is sent only into a posted receive); "
                    + "post the receives first (comm.batch() posts them before its sends; or recvAsync before the send), "
                    + "let the ranks alternate (even ranks send first), or raise HCOMM_EAGER_LIMIT above the message size";
        }
        if (allRecvs) {
            return "a likely deadlock: " + who + " each wait to receive from the next, and none sends; let one side send "
                    + "first, or use comm.batch() on every rank";
        }
        return "a likely deadlock: " + who + " each wait for the next";
    }
}
