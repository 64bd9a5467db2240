package io.hcomm4j.monitor;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What the ranks' flight records say together ({@code hcomm trace DIR}): per communicator, the first collective
 * sequence number where the ranks part ways, and how: some ranks called another op or other arguments there (a
 * mismatch), some never called it (they are behind: stuck in something earlier, or in point-to-point traffic), or
 * every rank called it and some have not finished it (a hang inside the op: the ranks still in it and the ones they
 * wait for). Then each rank's point-to-point ops that had not ended when it dumped.
 *
 * @param findings one per communicator with something to say, first the ones that diverge
 * @param summary  one line: the first divergence, or that the records agree
 */
public record TraceAnalysis(List<Finding> findings, String summary) {
    /**
     * What was found on one communicator.
     *
     * @param commId   the communicator
     * @param seq      the first collective sequence number where the ranks differ (-1: they agree on collectives)
     * @param kind     {@code mismatch}, {@code behind}, {@code in_op}, {@code failed}, {@code p2p} (only point-to-point
     *                 ops pending) or {@code missing} (a member's dump has no record of the communicator)
     * @param ranks    the ranks (of the communicator) the finding names: those that differ, are behind, or still run
     * @param lines    the explanation, a line each
     */
    public record Finding(long commId, long seq, String kind, List<Integer> ranks, List<String> lines) {
        /** @throws NullPointerException if kind or a list is null */
        public Finding {
            java.util.Objects.requireNonNull(kind, "kind");
            ranks = List.copyOf(ranks);
            lines = List.copyOf(lines);
        }
    }

    /** @throws NullPointerException if an argument is null */
    public TraceAnalysis {
        findings = List.copyOf(findings);
        java.util.Objects.requireNonNull(summary, "summary");
    }

    /** Analyses the dumps of one job (one per rank; a missing rank is named). */
    public static TraceAnalysis of(List<TraceDump> dumps) {
        Map<Long, Map<Integer, TraceDump.Comm>> byComm = new TreeMap<>(Long::compareUnsigned);
        Map<Long, Integer> sizes = new TreeMap<>(Long::compareUnsigned);
        for (TraceDump d : dumps) {
            for (TraceDump.Comm c : d.comms()) {
                byComm.computeIfAbsent(c.id(), k -> new TreeMap<>()).put(c.rank(), c);
                sizes.putIfAbsent(c.id(), c.size());
            }
        }
        List<Finding> out = new ArrayList<>();
        for (var e : byComm.entrySet()) {
            Finding f = communicator(e.getKey(), sizes.get(e.getKey()), e.getValue());
            if (f != null) out.add(f);
        }
        out.sort(java.util.Comparator.comparing((Finding f) -> f.seq() < 0).thenComparing(Finding::commId, Long::compareUnsigned));
        String summary;
        if (dumps.isEmpty()) {
            summary = "no dumps";
        } else if (out.isEmpty()) {
            summary = "the " + dumps.size() + " ranks' records agree: every collective they called has ended on every rank";
        } else {
            Finding first = out.get(0);
            summary = first.seq() >= 0
                    ? "first divergence: communicator " + Long.toHexString(first.commId()) + ", collective #" + first.seq() + " (" + first.kind()
                            + ", ranks " + first.ranks() + ")"
                    : "collectives agree; " + first.lines().get(0);
        }
        return new TraceAnalysis(out, summary);
    }

    private static Finding communicator(long id, int size, Map<Integer, TraceDump.Comm> ranks) {
        String name = "communicator " + Long.toHexString(id) + " (" + size + " ranks)";
        List<Integer> absent = new ArrayList<>();
        for (int r = 0; r < size; r++) if (!ranks.containsKey(r)) absent.add(r);
        // per rank: its collectives by sequence number
        Map<Integer, Map<Long, TraceEntry>> coll = new TreeMap<>();
        long lowestCovered = 1;
        long highest = 0;
        for (var e : ranks.entrySet()) {
            Map<Long, TraceEntry> bySeq = new TreeMap<>();
            for (TraceEntry t : e.getValue().entries()) if (t.kind() == OpTrace.Kind.COLLECTIVE && t.seq() > 0) bySeq.put(t.seq(), t);
            coll.put(e.getKey(), bySeq);
            // a rank whose ring dropped its oldest ops says nothing below what it kept
            long kept = bySeq.isEmpty() ? e.getValue().collectives() + 1 : ((TreeMap<Long, TraceEntry>) bySeq).firstKey();
            if (e.getValue().recorded() > e.getValue().capacity()) lowestCovered = Math.max(lowestCovered, kept);
            highest = Math.max(highest, e.getValue().collectives());
        }
        for (long seq = lowestCovered; seq <= highest; seq++) {
            Map<String, List<Integer>> groups = new LinkedHashMap<>();
            Map<String, TraceEntry> example = new LinkedHashMap<>();
            List<Integer> notCalled = new ArrayList<>();
            List<Integer> running = new ArrayList<>();
            List<Integer> done = new ArrayList<>();
            for (var e : coll.entrySet()) {
                TraceEntry t = e.getValue().get(seq);
                if (t == null) {
                    if (ranks.get(e.getKey()).collectives() < seq) notCalled.add(e.getKey());
                    continue;
                }
                String key = signature(t);
                groups.computeIfAbsent(key, k -> new ArrayList<>()).add(e.getKey());
                example.putIfAbsent(key, t);
                (t.ended() ? done : running).add(e.getKey());
            }
            if (groups.size() > 1) {
                List<String> lines = new ArrayList<>();
                lines.add(name + ": collective #" + seq + " differs between ranks:");
                // the odd ones out: every rank outside the largest group (the first of equal ones)
                List<Integer> majority = groups.values().stream().max(java.util.Comparator.comparingInt(List::size)).orElseThrow();
                List<Integer> odd = new ArrayList<>();
                for (var g : groups.entrySet()) {
                    lines.add("  " + ranksText(g.getValue()) + " called " + describe(example.get(g.getKey())));
                    if (g.getValue() != majority) odd.addAll(g.getValue());
                }
                java.util.Collections.sort(odd);
                if (!notCalled.isEmpty()) lines.add("  " + ranksText(notCalled) + " had not called it");
                return new Finding(id, seq, "mismatch", odd, lines);
            }
            if (!notCalled.isEmpty()) {
                List<String> lines = new ArrayList<>();
                TraceEntry t = example.isEmpty() ? null : example.values().iterator().next();
                lines.add(name + ": " + ranksText(notCalled) + " never called collective #" + seq
                        + (t == null ? "" : " (" + describe(t) + ")") + "; "
                        + (done.isEmpty() && running.isEmpty() ? "no rank has"
                        : ranksText(concat(running, done)) + (running.isEmpty() ? " finished it" : " called it")));
                for (int r : running) lines.add("  rank " + r + " waits in it for " + seconds(coll.get(r).get(seq).durationNanos()));
                for (int r : notCalled) lines.add("  rank " + r + ": " + lastOps(ranks.get(r)));
                return new Finding(id, seq, "behind", notCalled, lines);
            }
            if (!running.isEmpty() && groups.size() == 1) {
                List<String> lines = new ArrayList<>();
                TraceEntry t = example.values().iterator().next();
                lines.add(name + ": collective #" + seq + " (" + describe(t) + ") has not ended on " + ranksText(running)
                        + (done.isEmpty() ? "" : "; " + ranksText(done) + " finished it"));
                for (int r : running) {
                    TraceEntry x = coll.get(r).get(seq);
                    lines.add("  rank " + r + ": " + x.state().label() + " for " + seconds(x.durationNanos())
                            + (x.error() == null ? "" : ", " + x.error()));
                }
                for (var e : coll.entrySet()) {
                    TraceEntry x = e.getValue().get(seq);
                    if (x != null && x.state() == OpTrace.State.FAILED) lines.add("  rank " + e.getKey() + " failed it: " + x.error());
                }
                return new Finding(id, seq, "in_op", running, lines);
            }
            List<Integer> failed = new ArrayList<>();
            List<String> lines = new ArrayList<>();
            for (var e : coll.entrySet()) {
                TraceEntry x = e.getValue().get(seq);
                if (x != null && x.state() == OpTrace.State.FAILED) {
                    failed.add(e.getKey());
                    lines.add("  rank " + e.getKey() + ": " + x.error());
                }
            }
            if (!failed.isEmpty()) {
                lines.addFirst(name + ": collective #" + seq + " (" + describe(example.values().iterator().next()) + ") failed on "
                        + ranksText(failed));
                return new Finding(id, seq, "failed", failed, lines);
            }
        }
        List<String> lines = new ArrayList<>();
        List<Integer> waiting = new ArrayList<>();
        for (var e : ranks.entrySet()) {
            for (TraceEntry t : e.getValue().entries()) {
                if (t.kind() != OpTrace.Kind.COLLECTIVE && !t.ended()) {
                    if (waiting.isEmpty() || waiting.getLast() != e.getKey()) waiting.add(e.getKey());
                    lines.add("rank " + e.getKey() + " on " + name + ": " + describe(t) + " " + t.state().label() + " for "
                            + seconds(t.durationNanos()));
                }
            }
        }
        if (!absent.isEmpty()) lines.addFirst(name + ": no dump has a record of it from " + ranksText(absent));
        if (lines.isEmpty()) return null;
        return new Finding(id, -1, absent.isEmpty() ? "p2p" : "missing", absent.isEmpty() ? waiting : absent, lines);
    }

    private static List<Integer> concat(List<Integer> a, List<Integer> b) {
        TreeSet<Integer> s = new TreeSet<>(a);
        s.addAll(b);
        return new ArrayList<>(s);
    }

    /** What ranks compare: the fingerprint when there is one, else the op and its arguments. */
    private static String signature(TraceEntry t) {
        if (t.fingerprint() != 0) return t.op() + "/" + Integer.toHexString(t.fingerprint());
        return t.op() + "/" + t.type() + "/" + t.reduction() + "/" + t.count() + "/" + t.peer();
    }

    /** "allReduce (count 1024 FLOAT32 SUM, 4.0 KiB)", "send to rank 1 (tag 7, 64 B)". */
    public static String describe(TraceEntry t) {
        StringBuilder sb = new StringBuilder(t.op());
        switch (t.kind()) {
            case COLLECTIVE -> {
                sb.append(" (");
                if (t.count() >= 0) sb.append("count ").append(t.count());
                if (t.type() != null) sb.append(' ').append(t.type());
                if (t.reduction() != null) sb.append(' ').append(t.reduction());
                if (t.peer() >= 0) sb.append(", root ").append(t.peer());
                if (t.bytes() >= 0) sb.append(", ").append(io.hcomm4j.Units.bytes(t.bytes()));
                sb.append(')');
            }
            case P2P, ONE_SIDED -> {
                boolean from = t.op().startsWith("recv") || t.op().equals("probe") || t.op().equals("get");
                sb.append(from ? " from " : " to ").append(t.peer() < 0 ? "any rank" : "rank " + t.peer());
                sb.append(" (tag ").append(t.tag() < 0 ? "any" : String.valueOf(t.tag()));
                if (t.bytes() >= 0) sb.append(", ").append(io.hcomm4j.Units.bytes(t.bytes()));
                sb.append(')');
            }
        }
        return sb.toString().replace(" ()", "").replace("(, ", "(");
    }

    private static String lastOps(TraceDump.Comm c) {
        List<TraceEntry> es = c.entries();
        for (int i = es.size() - 1; i >= 0; i--) {
            TraceEntry t = es.get(i);
            if (!t.ended()) {
                return "in " + describe(t) + (t.seq() > 0 ? " #" + t.seq() : "") + ", " + t.state().label() + " for " + seconds(t.durationNanos());
            }
        }
        if (es.isEmpty()) return "no ops recorded";
        TraceEntry t = es.getLast();
        return "its last op, " + describe(t) + (t.seq() > 0 ? " #" + t.seq() : "") + ", " + t.state().label()
                + " (it runs no op of this communicator: it computes, or waits elsewhere)";
    }

    private static String ranksText(List<Integer> ranks) {
        return (ranks.size() == 1 ? "rank " : "ranks ") + ranks.toString().replace("[", "").replace("]", "");
    }

    private static String seconds(long nanos) {
        return io.hcomm4j.Units.duration(nanos);
    }

    /** The findings and the summary as text, a line each. */
    public String text() {
        StringBuilder sb = new StringBuilder();
        for (Finding f : findings) for (String l : f.lines()) sb.append(l).append('\n');
        return sb.append(summary).append('\n').toString();
    }
}
