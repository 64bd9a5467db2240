package io.hcomm4j.transport;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;

/**
 * Per communicator channel: receives posted in order, and unexpected messages in order of arrival. Unexpected messages
 * enter and leave only through the methods here, which count them against the transport's bound ({@link MatchTables}).
 */
final class MatchTable {
    final ArrayList<RecvRequest> posted = new ArrayList<>();
    /** Read-only outside this class: every change is counted ({@link MatchTables#held}, {@link MatchTables#released}). */
    final ArrayList<Unexpected> unexpected = new ArrayList<>();
    final ArrayList<ProbeRequest> probes = new ArrayList<>();

    final HashMap<Integer, Matching.Watch> watches = new HashMap<>();
    /** Tags of the finished ops' watches ({@link Matching#retire}), oldest first; at most {@link #RETIRED}. */
    final ArrayDeque<Integer> retired = new ArrayDeque<>();
    /**
     * How many finished ops keep their watch. A late message comes from a rank that ran the op differently, and such a
     * rank is stuck in that op or the next few (they need this rank), so the last ones suffice.
     */
    static final int RETIRED = 64;
    private final MatchTables owner;

    MatchTable(MatchTables owner) {
        this.owner = owner;
    }

    /**
     * Whether {@code u} belongs to an op this rank finished: then it is reported to that op's watch (once) and must not
     * be queued, as no receive will ever take it.
     */
    boolean late(Unexpected u) {
        if (retired.isEmpty()) return false;
        Matching.Watch w = watches.get(u.tag());
        if (w == null || !w.finished()) return false;
        watches.remove(u.tag());
        FingerprintMismatchException e = new FingerprintMismatchException(u.src(), u.flags(), w.flags(), true);
        // reported after the match lock is released: the callback sends, which takes it again
        Thread.ofVirtual().start(() -> w.onMismatch().accept(e));
        return true;
    }

    /** Keeps the watch of a finished op (see {@link #late}), dropping the oldest beyond {@link #RETIRED}. */
    void retire(int tag) {
        Matching.Watch w = watches.get(tag);
        if (w == null) return; // it has reported already
        watches.put(tag, w.finish());
        retired.addLast(tag);
        if (retired.size() > RETIRED) {
            Integer oldest = retired.removeFirst();
            Matching.Watch o = watches.get(oldest);
            if (o != null && o.finished()) watches.remove(oldest);
        }
    }

    /** Queues an unexpected message; returns the waiting probes it satisfies (removed), or null. */
    List<ProbeRequest> addUnexpected(Unexpected u) {
        unexpected.add(u);
        owner.held(u);
        if (!watches.isEmpty()) {
            Matching.Watch w = watches.get(u.tag());
            if (w != null && !w.finished() && w.flags() != u.flags()) {
                watches.remove(u.tag());
                // reported after the match lock is released: the callback fails requests, which takes it again
                FingerprintMismatchException e = new FingerprintMismatchException(u.src(), u.flags(), w.flags());
                Thread.ofVirtual().start(() -> w.onMismatch().accept(e));
            }
        }
        if (probes.isEmpty()) return null;
        List<ProbeRequest> hit = null;
        for (Iterator<ProbeRequest> it = probes.iterator(); it.hasNext(); ) {
            ProbeRequest p = it.next();
            if (p.matches(u.src(), u.tag())) {
                it.remove();
                if (hit == null) hit = new ArrayList<>();
                hit.add(p);
            }
        }
        return hit;
    }

    Unexpected peekUnexpected(int src, int tag) {
        for (Unexpected u : unexpected) {
            if (Matching.matches(src, tag, u.src(), u.tag())) return u;
        }
        return null;
    }

    RecvRequest takePosted(int src, int tag) {
        for (int i = 0; i < posted.size(); i++) {
            RecvRequest r = posted.get(i);
            if (r.matches(src, tag)) return posted.remove(i);
        }
        return null;
    }

    Unexpected takeUnexpected(RecvRequest r) {
        for (int i = 0; i < unexpected.size(); i++) {
            Unexpected u = unexpected.get(i);
            if (r.matches(u.src(), u.tag())) {
                owner.released(u);
                return unexpected.remove(i);
            }
        }
        return null;
    }

    /** Removes the unexpected messages {@code which} selects. */
    void removeUnexpectedIf(java.util.function.Predicate<Unexpected> which) {
        unexpected.removeIf(u -> {
            if (!which.test(u)) return false;
            owner.released(u);
            return true;
        });
    }

    /** Removes every unexpected message; returns them, in order. */
    List<Unexpected> drainUnexpected() {
        List<Unexpected> all = new ArrayList<>(unexpected);
        for (Unexpected u : all) owner.released(u);
        unexpected.clear();
        return all;
    }
}
