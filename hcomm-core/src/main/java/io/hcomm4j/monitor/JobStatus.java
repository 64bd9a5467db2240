package io.hcomm4j.monitor;

import io.hcomm4j.Units;
import io.hcomm4j.HcommException;
import io.hcomm4j.bootstrap.Store;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What {@code hcomm status} shows: every rank's {@link RankStatus} read from the job's store, and which ranks are
 * behind: those the stuck ops of the others wait for and that have not reached the same op (or report nothing).
 *
 * @param namespace the session namespace read ({@code hcomm/<generation>/})
 * @param worldSize ranks of the job
 * @param ranks     each rank's status; null where a rank has published none (it was never stuck, never asked, or cannot
 *                  reach the store)
 */
public record JobStatus(String namespace, int worldSize, List<RankStatus> ranks) {
    /** @throws NullPointerException if an argument is null */
    public JobStatus {
        java.util.Objects.requireNonNull(namespace, "namespace");
        ranks = java.util.Collections.unmodifiableList(new ArrayList<>(ranks));
    }

    /**
     * Reads the statuses of the session {@code generation} (empty: the latest session of rank 0) from {@code store}.
     *
     * @throws HcommException if the store holds no HComm4J session
     */
    public static JobStatus read(Store store, OptionalLong generation) {
        long gen;
        if (generation.isPresent()) {
            gen = generation.getAsLong();
        } else {
            byte[] g = store.tryGet("hcomm/generation/0");
            if (g == null) throw new HcommException("the store holds no HComm4J session (no key hcomm/generation/0): has the job called Hcomm.init()?");
            gen = Long.parseLong(new String(g, StandardCharsets.UTF_8).trim());
        }
        String ns = "hcomm/" + gen + "/";
        byte[] joined = store.tryGet(ns + "joined");
        if (joined == null) throw new HcommException("session " + ns + " has not started (no key " + ns + "joined)");
        int size = (int) Long.parseLong(new String(joined, StandardCharsets.UTF_8).trim());
        List<RankStatus> ranks = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            byte[] v = store.tryGet(RankStatus.key(ns, r));
            RankStatus st = null;
            if (v != null) {
                try {
                    st = RankStatus.decode(new String(v, StandardCharsets.UTF_8));
                } catch (IllegalArgumentException e) {
                    st = null;
                }
            }
            ranks.add(st);
        }
        return new JobStatus(ns, size, ranks);
    }

    /**
     * Who is behind, one line per finding: ranks that have not reached the collective others are stuck in, ranks that
     * stuck ops wait for and that report nothing, and the failed ranks.
     */
    public List<String> findings() {
        List<String> out = new ArrayList<>();
        // failed ranks, with who reports them
        Map<Integer, TreeSet<Integer>> failedBy = new TreeMap<>();
        Map<Integer, String> why = new TreeMap<>();
        for (RankStatus s : ranks) {
            if (s == null) continue;
            for (int f : s.failedRanks()) {
                failedBy.computeIfAbsent(f, k -> new TreeSet<>()).add(s.rank());
                if (!s.reason().isEmpty()) why.putIfAbsent(f, s.reason());
            }
        }
        for (var e : failedBy.entrySet()) {
            out.add("rank " + e.getKey() + " failed (reported by " + ranksText(e.getValue()) + ")"
                    + (why.containsKey(e.getKey()) ? ": " + why.get(e.getKey()) : ""));
        }
        // collectives: per communicator, the stuck op with the highest sequence number and who waits in it
        Map<Long, TreeMap<Long, TreeSet<Integer>>> stuckIn = new TreeMap<>();
        Map<Long, String> opName = new TreeMap<>();
        for (RankStatus s : ranks) {
            if (s == null) continue;
            for (RankStatus.Op o : s.ops()) {
                if (!o.collective() || !o.stuck()) continue;
                stuckIn.computeIfAbsent(o.commId(), k -> new TreeMap<>()).computeIfAbsent(o.seq(), k -> new TreeSet<>()).add(s.rank());
                opName.put(o.commId() * 31 + o.seq(), o.kind());
            }
        }
        TreeSet<Integer> named = new TreeSet<>(failedBy.keySet());
        for (var c : stuckIn.entrySet()) {
            long comm = c.getKey();
            var last = c.getValue().lastEntry();
            long seq = last.getKey();
            TreeSet<Integer> waiting = last.getValue();
            String op = opName.get(comm * 31 + seq) + " #" + seq;
            TreeSet<Integer> waitedFor = new TreeSet<>();
            for (int w : waiting) {
                for (RankStatus.Op o : ranks.get(w).ops()) {
                    if (o.collective() && o.commId() == comm && o.seq() == seq) waitedFor.addAll(o.waitingFor());
                }
            }
            for (int r = 0; r < worldSize; r++) {
                RankStatus s = ranks.get(r);
                if (waiting.contains(r) || failedBy.containsKey(r)) continue;
                RankStatus.Comm mine = s == null ? null : s.comms().stream().filter(x -> x.id() == comm).findFirst().orElse(null);
                boolean inIt = s != null && s.ops().stream().anyMatch(o -> o.collective() && o.commId() == comm && o.seq() == seq);
                if (inIt) continue;
                if (mine != null && mine.collectives() < seq) {
                    String doing = s.ops().isEmpty() ? "runs no op (in its own code?)" : "runs " + describe(s.ops().get(0));
                    out.add("rank " + r + " is behind on communicator " + Long.toHexString(comm) + ": it has called "
                            + mine.collectives() + " collectives and " + doing + "; " + ranksText(waiting) + " wait in " + op);
                    named.add(r);
                } else if (s == null && waitedFor.contains(r)) {
                    out.add("rank " + r + " is behind or hung: " + ranksText(waiting) + " wait for it in " + op
                            + " on communicator " + Long.toHexString(comm) + ", and it published no status (it did not answer: "
                            + "is its process stopped, or busy without calling the library?)");
                    named.add(r);
                }
            }
        }
        // point-to-point: who waits for whom
        for (RankStatus s : ranks) {
            if (s == null) continue;
            for (RankStatus.Op o : s.ops()) {
                if (o.collective() || !o.stuck()) continue;
                out.add("rank " + s.rank() + " has waited " + seconds(o.waitedMillis()) + " in " + describe(o));
                for (int w : o.waitingFor()) {
                    if (!named.contains(w) && ranks.get(w) == null) {
                        out.add("rank " + w + " published no status while rank " + s.rank() + " waits for it");
                        named.add(w);
                    }
                }
            }
        }
        return out;
    }

    /** The report {@code hcomm status} prints: one row per rank, then the findings. */
    public String render(long nowMillis) {
        StringBuilder sb = new StringBuilder();
        int reporting = 0;
        for (RankStatus s : ranks) if (s != null) reporting++;
        sb.append(String.format(Locale.ROOT, "session %s: %d ranks, %d with a published status%n", namespace, worldSize, reporting));
        sb.append(String.format(Locale.ROOT, "%-5s %-9s %-10s %-24s %-34s %s%n", "RANK", "HEALTH", "UPDATED", "COLLECTIVES CALLED",
                "OPS", "WAITING FOR"));
        for (int r = 0; r < worldSize; r++) {
            RankStatus s = ranks.get(r);
            if (s == null) {
                sb.append(String.format(Locale.ROOT, "%-5d %-9s %s%n", r, "-", "no status published (not stuck, not asked, or no store access)"));
                continue;
            }
            StringBuilder calls = new StringBuilder();
            for (RankStatus.Comm c : s.comms()) {
                if (!calls.isEmpty()) calls.append(", ");
                calls.append("comm ").append(Long.toHexString(c.id())).append(": ").append(c.collectives());
            }
            String updated = seconds(Math.max(0, nowMillis - s.timeMillis())) + " ago";
            List<RankStatus.Op> ops = s.ops();
            if (ops.isEmpty()) {
                sb.append(String.format(Locale.ROOT, "%-5d %-9s %-10s %-24s %-34s %s%n", r, s.health(), updated, calls, "idle", "-"));
            }
            for (int i = 0; i < ops.size(); i++) {
                RankStatus.Op o = ops.get(i);
                String opText = describe(o) + ", " + seconds(o.waitedMillis()) + (o.stuck() ? " STUCK" : "");
                String waits = o.waitingFor().isEmpty() ? (o.collective() ? "-" : "any") : o.waitingFor().toString();
                if (i == 0) sb.append(String.format(Locale.ROOT, "%-5d %-9s %-10s %-24s %-34s %s%n", r, s.health(), updated, calls, opText, waits));
                else sb.append(String.format(Locale.ROOT, "%-5s %-9s %-10s %-24s %-34s %s%n", "", "", "", "", opText, waits));
            }
        }
        List<String> findings = findings();
        sb.append(findings.isEmpty() ? "nobody is behind as far as the published statuses tell\n" : "");
        for (String f : findings) sb.append("* ").append(f).append('\n');
        return sb.toString();
    }

    private static String describe(RankStatus.Op o) {
        String where = o.commId() == 0 ? "" : " on comm " + Long.toHexString(o.commId());
        if (o.collective()) return o.kind() + " #" + o.seq() + (o.bytes() >= 0 ? " " + bytes(o.bytes()) : "") + where;
        return o.kind() + " tag " + (o.seq() < 0 ? "any" : String.valueOf(o.seq())) + (o.bytes() > 0 ? " " + bytes(o.bytes()) : "") + where;
    }

    private static String bytes(long b) {
        return Units.bytes(b);
    }

    private static String seconds(long ms) {
        return Units.duration(ms * 1_000_000);
    }

    private static String ranksText(java.util.Collection<Integer> rs) {
        return (rs.size() == 1 ? "rank " : "ranks ") + Arrays.toString(rs.toArray()).replaceAll("[\\[\\]]", "");
    }

    /** The store key where {@code hcomm status --watch} asks every rank of a session to publish its state now. */
    public static String refreshKey(String namespace) {
        return namespace + "status/refresh";
    }

    /**
     * Asks every rank of the session to publish its state (each looks every 2 s, from its watchdog; a rank publishes
     * only while HCOMM_STUCK_REPORT is on); returns the request's number.
     */
    public static long requestRefresh(Store store, String namespace) {
        return store.add(refreshKey(namespace), 1);
    }

    /** The status as JSON: the session, every rank's state (null where none was published) and the findings. */
    public String toJson() {
        Map<String, Object> root = new java.util.LinkedHashMap<>();
        root.put("session", namespace);
        root.put("world_size", worldSize);
        List<Object> rs = new ArrayList<>();
        for (RankStatus st : ranks) {
            if (st == null) {
                rs.add(null);
                continue;
            }
            Map<String, Object> m = new java.util.LinkedHashMap<>();
            m.put("rank", st.rank());
            m.put("pid", st.pid());
            m.put("host", st.host());
            m.put("published_ms", st.timeMillis());
            m.put("health", st.health());
            m.put("failed_ranks", st.failedRanks());
            m.put("reason", st.reason());
            List<Object> cs = new ArrayList<>();
            for (RankStatus.Comm c : st.comms()) {
                Map<String, Object> cm = new java.util.LinkedHashMap<>();
                cm.put("id", Long.toHexString(c.id()));
                cm.put("size", c.size());
                cm.put("rank", c.rank());
                cm.put("collectives", c.collectives());
                cs.add(cm);
            }
            m.put("communicators", cs);
            List<Object> os = new ArrayList<>();
            for (RankStatus.Op o : st.ops()) {
                Map<String, Object> om = new java.util.LinkedHashMap<>();
                om.put("communicator", Long.toHexString(o.commId()));
                om.put("op", o.kind());
                om.put("collective", o.collective());
                om.put(o.collective() ? "seq" : "tag", o.seq());
                om.put("bytes", o.bytes());
                om.put("waited_ms", o.waitedMillis());
                om.put("waiting_for", o.waitingFor());
                om.put("stuck", o.stuck());
                os.add(om);
            }
            m.put("ops", os);
            rs.add(m);
        }
        root.put("ranks", rs);
        root.put("findings", findings());
        return Json.write(root);
    }
}
