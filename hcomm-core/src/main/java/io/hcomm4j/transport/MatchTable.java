package io.hcomm4j.transport;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;

/** Per communicator: receives posted in order, and unexpected messages in order of arrival. */
final class MatchTable {
    final ArrayList<RecvRequest> posted = new ArrayList<>();
    final ArrayList<Unexpected> unexpected = new ArrayList<>();
    final ArrayList<ProbeRequest> probes = new ArrayList<>();

    final HashMap<Integer, Matching.Watch> watches = new HashMap<>();

    /** Queues an unexpected message; returns the waiting probes it satisfies (removed), or null. */
    List<ProbeRequest> addUnexpected(Unexpected u) {
        unexpected.add(u);
        if (!watches.isEmpty()) {
            Matching.Watch w = watches.get(u.tag());
            if (w != null && w.flags() != u.flags()) {
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
            if (r.matches(u.src(), u.tag())) return unexpected.remove(i);
        }
        return null;
    }
}
