package io.hcomm4j.transport;

import io.hcomm4j.CommAbortedException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

import static io.hcomm4j.transport.PeerTransport.ANY;

/**
 * MPI matching: per communicator, receives in order of posting and unexpected messages in order of arrival, matched
 * by source and tag with wildcards. A message meets its receive here whether it is eager (its bytes), rendezvous (an
 * RTS: the CTS goes once it is matched) or a send to self; probes and fingerprint watches look at the same tables.
 *
 * <p>Everything here is guarded by the transport's match lock; what a match sets off (completions, CTS frames,
 * listener calls) runs after the lock is released, because it may take the lock again.
 */
final class Matching {
    private final PeerTransport t;
    private final int rank;
    private final long eagerLimit;
    private final PeerLink[] links;
    /** The match lock (shared with {@link Failures}, whose dead ranks it guards too). */
    private final ReentrantLock lock;
    /** Every channel's table, the bound on what they hold together, gone communicators; guarded by {@link #lock}. */
    final MatchTables tables;
    /** Ranks whose ops fail at once (failed, or closed their session); guarded by {@link #lock}. */
    private final boolean[] failed;
    /** How many peers have failed so far (written under the lock after {@link #failed}; read without it). */
    private volatile int failures;

    Matching(PeerTransport t, int rank, long eagerLimit, PeerLink[] links, ReentrantLock lock, TransportLimits limits) {
        this.t = t;
        this.rank = rank;
        this.eagerLimit = eagerLimit;
        this.links = links;
        this.lock = lock;
        this.failed = new boolean[links.length];
        this.tables = new MatchTables(rank, limits.unexpectedTotal(), limits.unexpectedCount());
    }

    /** How many peers have failed (lost connection, or closed their session) so far; cheap, for polling loops. */
    int failures() {
        return failures;
    }

    /** Whether world rank {@code peer} has failed or closed its session. */
    boolean failed(int peer) {
        // the volatile read orders the plain one after it: a failure counted is a failure seen
        return failures != 0 && failed[peer];
    }

    /** Ops on {@code p} fail at once from now on, unannounced (lock held: a rank assumed failed from the start). */
    void assumeFailed(int p) {
        failed[p] = true;
    }

    /**
     * A replacement process takes {@code p}'s slot (lock held): what the old one sent and nobody received is dropped (its
     * credit belonged to the old connection), and ops on {@code p} no longer fail at once.
     */
    void revive(int p) {
        for (MatchTable table : tables.all()) table.removeUnexpectedIf(u -> u.src() == p);
        failed[p] = false;
    }

    /**
     * {@code p} failed: its receives (and those from {@link PeerTransport#ANY}), probes and rendezvous messages leave the
     * tables and go to {@code doomed} (the caller fails them).
     */
    void failPeer(int p, List<Request<?>> doomed) {
        lock.lock();
        try {
            failed[p] = true;
            failures++;
            for (MatchTable table : tables.all()) {
                for (Iterator<RecvRequest> it = table.posted.iterator(); it.hasNext(); ) {
                    RecvRequest r = it.next();
                    if (r.src == p || r.src == ANY) {
                        it.remove();
                        doomed.add(r);
                    }
                }
                table.removeUnexpectedIf(u -> u.src() == p && u.data() == null && u.selfSend() == null);
                for (Iterator<ProbeRequest> it = table.probes.iterator(); it.hasNext(); ) {
                    ProbeRequest pr = it.next();
                    if (pr.src == p || pr.src == ANY) {
                        it.remove();
                        doomed.add(pr);
                    }
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** The session closes: every waiting receive, probe and send to self leaves the tables and goes to {@code doomed}. */
    void clear(List<Request<?>> doomed) {
        lock.lock();
        try {
            for (MatchTable table : tables.all()) {
                doomed.addAll(table.posted);
                table.posted.clear();
                doomed.addAll(table.probes);
                table.probes.clear();
                for (Unexpected u : table.drainUnexpected()) if (u.selfSend() != null) doomed.add(u.selfSend());
            }
        } finally {
            lock.unlock();
        }
    }

    RecvRequest recv(RecvRequest r) {
        long commId = r.commId;
        int src = r.src;
        if (t.isClosing()) {
            r.fail(new CommAbortedException("rank " + rank + ": " + r.describe() + " failed: the session is closed"));
            return r;
        }
        Runnable after = null;
        lock.lock();
        try {
            MatchTable table = table(commId);
            Unexpected u = table.takeUnexpected(r);
            if (u != null) {
                after = deliverUnexpected(r, u);
            } else if (src != ANY && failed[src]) {
                after = () -> r.fail(t.failures.peerFailed(src, r.describe(), null));
            } else {
                table.posted.add(r);
            }
        } finally {
            lock.unlock();
        }
        if (after != null) after.run();
        else if (src != ANY && src != rank && links[src].state == PeerLink.State.IDLE) t.connections.connectInBackground(src);
        return r;
    }

    /**
     * The status of the first message from {@code src} (or {@link #ANY}) with {@code tag} (or {@link #ANY}) that a
     * receive posted now would get, or {@code null} if none has arrived. Source and tag are world rank and tag.
     */
    io.hcomm4j.Status iprobe(long commId, int src, int tag, int[] sourceMap) {
        lock.lock();
        try {
            Unexpected u = table(commId).peekUnexpected(src, tag);
            return u == null ? null : new io.hcomm4j.Status(sourceMap == null ? u.src() : sourceMap[u.src()], u.tag(), u.size());
        } finally {
            lock.unlock();
        }
    }

    /** Completes with the status of the first matching message once one can be received (it is not received). */
    ProbeRequest probe(long commId, int src, int tag, int[] sourceMap) {
        ProbeRequest p = new ProbeRequest(t, commId, src, tag, sourceMap);
        if (t.isClosing()) {
            p.fail(new CommAbortedException("rank " + rank + ": " + p.describe() + " failed: the session is closed"));
            return p;
        }
        Unexpected found = null;
        boolean dead = false;
        lock.lock();
        try {
            MatchTable table = table(commId);
            Unexpected u = table.peekUnexpected(src, tag);
            if (u != null) found = u;
            else if (src != ANY && failed[src]) dead = true;
            else table.probes.add(p);
        } finally {
            lock.unlock();
        }
        if (found != null) p.succeedWith(found.src(), found.tag(), found.size());
        else if (dead) p.fail(t.failures.peerFailed(src, p.describe(), null));
        else if (src != ANY && src != rank && links[src].state == PeerLink.State.IDLE) t.connections.connectInBackground(src);
        return p;
    }

    private static void succeedProbes(List<ProbeRequest> probed, int src, int tag, long size) {
        if (probed == null) return;
        for (ProbeRequest p : probed) p.succeedWith(src, tag, size);
    }

    /** Matches a recv with an unexpected message (match lock held); returns what to run after unlocking. */
    private Runnable deliverUnexpected(RecvRequest r, Unexpected u) {
        r.matchedSrc = u.src();
        r.matchedTag = u.tag();
        r.matchedSize = u.size();
        FingerprintMismatchException wrong = r.mismatch(u.src(), u.flags());
        if (wrong != null || u.size() > r.buf.byteSize()) {
            Runnable refuse = u.data() != null ? null : refuseRendezvous(u);
            if (u.data() != null) releaseUnexpected(u);
            RuntimeException failure = wrong != null ? wrong : truncated(r, u.size());
            return () -> {
                if (refuse != null) refuse.run();
                r.fail(failure);
            };
        }
        if (u.data() != null) {
            MemorySegment.copy(MemorySegment.ofArray(u.data()), 0, r.buf, 0, u.size());
            releaseUnexpected(u);
            return r::succeedMatched;
        }
        if (u.selfSend() != null) {
            MemorySegment.copy(u.selfSend().buf, 0, r.buf, 0, u.size());
            SendRequest s = u.selfSend();
            return () -> {
                s.succeed(null);
                r.succeedMatched();
            };
        }
        // a rendezvous RTS: ask for the data
        PeerLink l = links[u.src()];
        r.msgId = u.msgId();
        // over UCX into native memory the payload comes by UCX's tag matching, straight into the buffer (UcxConduit)
        UcxConduit ucx = l.ch instanceof UcxConduit c && c.takesTagged(r.buf) ? c : null;
        if (!(l.ch instanceof ShmConduit) && ucx == null) r.expectChunks(u.size()); // over TCP the payload comes as DATA_PART chunks
        l.awaitingData.put(u.msgId(), r);
        return () -> {
            int cts = 0;
            if (ucx != null) {
                if (ucx.receiveTagged(r, u.msgId(), u.size())) cts = Frame.CTS_UCX;
                else r.expectChunks(u.size());
            }
            if (!l.sendFrame(Frame.CTS, cts, u.commId(), u.tag(), 0, u.msgId(), null, null)) {
                l.awaitingData.remove(u.msgId());
                r.fail(t.failures.peerFailed(u.src(), r.describe(), null));
            }
        };
    }

    private Runnable refuseRendezvous(Unexpected u) {
        if (u.selfSend() != null) {
            SendRequest s = u.selfSend();
            return () -> s.succeed(null);
        }
        PeerLink l = links[u.src()];
        return () -> l.sendFrame(Frame.CTS, Frame.CTS_DISCARD, u.commId(), u.tag(), 0, u.msgId(), null, null);
    }

    private void releaseUnexpected(Unexpected u) {
        if (u.src() != rank) links[u.src()].consumed(u.size() + Frame.EAGER_OVERHEAD);
    }

    private io.hcomm4j.MessageTruncatedException truncated(RecvRequest r, long messageSize) {
        return new io.hcomm4j.MessageTruncatedException("rank " + rank + ": " + r.describe() + ": buf is smaller than the message of "
                + messageSize + " bytes from rank " + r.matchedSrc
                + " (tag " + r.matchedTag + "); receive into a buffer of at least " + messageSize + " bytes (probe() tells the size first)",
                messageSize, r.buf.byteSize());
    }

    void sendToSelf(SendRequest s) {
        Runnable after;
        lock.lock();
        try {
            MatchTable table = table(s.commId);
            RecvRequest r = table.takePosted(rank, s.tag);
            if (r != null) {
                r.matchedSrc = rank;
                r.matchedTag = s.tag;
                r.matchedSize = s.size;
                FingerprintMismatchException wrong = r.mismatch(rank, s.flags);
                if (wrong != null || s.size > r.buf.byteSize()) {
                    RuntimeException failure = wrong != null ? wrong : truncated(r, s.size);
                    after = () -> {
                        s.succeed(null);
                        r.fail(failure);
                    };
                } else {
                    MemorySegment.copy(s.buf, 0, r.buf, 0, s.size);
                    after = () -> {
                        s.succeed(null);
                        r.succeedMatched();
                    };
                }
            } else if (s.size <= eagerLimit) {
                byte[] copy = s.buf.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                List<ProbeRequest> probed = table.addUnexpected(new Unexpected(s.commId, rank, s.tag, s.size, copy, 0, null, s.flags));
                after = () -> {
                    s.succeed(null);
                    succeedProbes(probed, rank, s.tag, s.size);
                };
            } else {
                List<ProbeRequest> probed = table.addUnexpected(new Unexpected(s.commId, rank, s.tag, s.size, null, 0, s, s.flags));
                after = probed == null ? null : () -> succeedProbes(probed, rank, s.tag, s.size);
            }
        } finally {
            lock.unlock();
        }
        if (after != null) after.run();
    }

    void abandonSend(SendRequest s) {
        if (s.dst == rank) {
            lock.lock();
            try {
                table(s.commId).removeUnexpectedIf(u -> u.selfSend() == s);
            } finally {
                lock.unlock();
            }
        }
        // a remote RTS stays known: if its CTS comes, the receiver is told the sender gave up
        s.abort("was abandoned after its deadline");
    }

    /**
     * Fingerprint watch of one collective op: its expected flags and what to do when a message carries others, or, once
     * the op {@code finished} here, when any message of it comes at all.
     */
    record Watch(int flags, java.util.function.Consumer<FingerprintMismatchException> onMismatch, boolean finished) {
        Watch finish() {
            return new Watch(flags, onMismatch, true);
        }
    }

    /**
     * Watches messages of {@code commId} with {@code tag} (one collective op) while it runs: any such message
     * carrying other flags than {@code flags}, matched or not (already waiting, or arriving later), is reported
     * to {@code onMismatch} once, on the thread that saw it. Even a message for which no receive is posted
     * (the peer's algorithm differs because its root or op differs) reveals the mismatch, instead of a wait
     * until the timeout.
     */
    void watch(long commId, int tag, int flags, java.util.function.Consumer<FingerprintMismatchException> onMismatch) {
        FingerprintMismatchException found = null;
        lock.lock();
        try {
            MatchTable table = table(commId);
            table.watches.put(tag, new Watch(flags, onMismatch, false));
            for (Unexpected u : table.unexpected) {
                if (u.tag() == tag && u.flags() != flags) {
                    found = new FingerprintMismatchException(u.src(), u.flags(), flags);
                    table.watches.remove(tag);
                    break;
                }
            }
        } finally {
            lock.unlock();
        }
        if (found != null) onMismatch.accept(found);
    }

    /**
     * The op of a {@link #watch} finished here: its watch stays (one of the last {@link MatchTable#RETIRED} per
     * communicator) and now reports any message of the op that still comes, with {@link FingerprintMismatchException#late},
     * and drops it. Such a message's sender called the op differently (a rooted op with another root sends to ranks that
     * expect nothing from it); without this, it would wait in the queue, and its sender's op until the timeout.
     */
    void retire(long commId, int tag) {
        lock.lock();
        try {
            MatchTable table = tables.find(commId);
            if (table != null) table.retire(tag);
        } finally {
            lock.unlock();
        }
    }

    /** Ends a {@link #watch}. */
    void unwatch(long commId, int tag) {
        lock.lock();
        try {
            MatchTable table = tables.find(commId);
            if (table != null) table.watches.remove(tag);
        } finally {
            lock.unlock();
        }
    }

    /** A receive or probe whose waiter gave up: withdraw it from its match table and fail it. */
    void abandonWaiting(Request<?> r) {
        withdraw(r, new CommAbortedException("rank " + rank + ": " + r.describe() + " was abandoned after its deadline"));
    }

    /**
     * Fails {@code r} with {@code cause}; a receive or probe still waiting in its match table is taken out first, so
     * no later message lands in its buffer (a receive already taking data finishes taking it).
     */
    void withdraw(Request<?> r, Throwable cause) {
        lock.lock();
        try {
            MatchTable table = tables.find(r.commId);
            if (table != null) {
                table.posted.remove(r);
                table.probes.remove(r);
            }
        } finally {
            lock.unlock();
        }
        r.fail(cause);
    }

    /** Whether a message from {@code src} with {@code tag} matches a wanted source and tag (either may be {@link #ANY}). */
    static boolean matches(int wantSrc, int wantTag, int src, int tag) {
        return (wantSrc == ANY || wantSrc == src) && (wantTag == ANY || wantTag == tag);
    }

    /** An EAGER header arrived on {@code l}: its payload goes to a matching posted receive, or to a new buffer. */
    void onEager(PeerLink l, long commId, int tag, long length, int flags) throws UnexpectedLimitException {
        if (tables.dropped(commId)) {
            // for an aborted communicator: read and drop, and give the credit back
            l.consumed(length + Frame.EAGER_OVERHEAD);
            l.expectPayload(null, length, null, null, commId, tag, flags);
            return;
        }
        RecvRequest r;
        lock.lock();
        try {
            MatchTable table = tables.find(commId); // none: no receive is posted (and a closed communicator's stays gone)
            r = table == null ? null : table.takePosted(l.peer, tag);
            if (r == null) tables.admit(l, commId, length); // before its payload is allocated
        } finally {
            lock.unlock();
        }
        if (r != null) {
            r.matchedSrc = l.peer;
            r.matchedTag = tag;
            r.matchedSize = length;
            l.consumed(length + Frame.EAGER_OVERHEAD);
            FingerprintMismatchException wrong = r.mismatch(l.peer, flags);
            if (wrong != null) {
                l.expectPayload(null, length, null, null, commId, tag, flags);
                r.fail(wrong);
            } else if (length > r.buf.byteSize()) {
                l.expectPayload(null, length, null, null, commId, tag, flags);
                r.fail(truncated(r, length));
            } else {
                l.expectPayload(r.buf, length, r, null, commId, tag, flags);
            }
        } else {
            byte[] data = new byte[(int) length];
            l.expectPayload(MemorySegment.ofArray(data), length, null, data, commId, tag, flags);
        }
    }

    /** An unexpected eager payload is complete: match it with a recv posted meanwhile, or queue it. */
    void onUnexpectedComplete(PeerLink l, long commId, int tag, byte[] data, int flags) {
        Runnable after = null;
        lock.lock();
        try {
            Unexpected u = new Unexpected(commId, l.peer, tag, data.length, data, 0, null, flags);
            if (tables.dropped(commId)) { // closed or aborted while its payload came
                releaseUnexpected(u);
                return;
            }
            MatchTable table = table(commId);
            RecvRequest r = table.takePosted(l.peer, tag);
            if (r != null) {
                after = deliverUnexpected(r, u);
            } else if (table.late(u)) {
                releaseUnexpected(u);
            } else {
                List<ProbeRequest> probed = table.addUnexpected(u);
                if (probed != null) after = () -> succeedProbes(probed, u.src(), u.tag(), u.size());
            }
        } finally {
            lock.unlock();
        }
        if (after != null) after.run();
    }

    /** An RTS arrived: match it now (and send CTS) or keep it as unexpected. */
    void onRts(PeerLink l, long commId, int tag, long length, long msgId, int flags) throws UnexpectedLimitException {
        if (tables.dropped(commId)) {
            l.sendFrame(Frame.CTS, Frame.CTS_DISCARD, commId, tag, 0, msgId, null, null); // aborted: the sender completes
            return;
        }
        Runnable after;
        lock.lock();
        try {
            Unexpected u = new Unexpected(commId, l.peer, tag, length, null, msgId, null, flags);
            MatchTable table = tables.dropped(commId) ? null : table(commId); // closed meanwhile: refused below
            RecvRequest r = table == null ? null : table.takePosted(l.peer, tag);
            if (table == null) {
                after = refuseRendezvous(u);
            } else if (r != null) {
                after = deliverUnexpected(r, u);
            } else if (table.late(u)) {
                after = null; // no CTS: the sender's op waits until the report (on the notice channel) fails it
            } else {
                tables.admit(l, commId, 0);
                List<ProbeRequest> probed = table.addUnexpected(u);
                after = probed == null ? null : () -> succeedProbes(probed, u.src(), u.tag(), u.size());
            }
        } finally {
            lock.unlock();
        }
        if (after != null) after.run();
    }

    private static long baseId(long commId) {
        return MatchTables.baseId(commId);
    }

    /**
     * Aborts communicator {@code commId} here: every pending op on any of its channels (user, collective, notice,
     * check) fails with {@code error.get()} (a receive that is taking data has it discarded), and later messages for it
     * are dropped on arrival (eager ones read and dropped, rendezvous ones refused).
     */
    void failCommunicator(long commId, java.util.function.Supplier<? extends RuntimeException> error) {
        endCommunicator(commId, error, false);
    }

    /**
     * Communicator {@code commId} was closed here: as {@link #failCommunicator} for what is still pending, and its
     * tables go ({@link MatchTables#closed}).
     */
    void closeCommunicator(long commId, java.util.function.Supplier<? extends RuntimeException> error) {
        endCommunicator(commId, error, true);
    }

    private void endCommunicator(long commId, java.util.function.Supplier<? extends RuntimeException> error, boolean closed) {
        long base = baseId(commId);
        if (!closed) tables.aborted(base);
        List<Request<?>> doomed = new ArrayList<>();
        List<Runnable> refusals = new ArrayList<>();
        lock.lock();
        try {
            for (long k = 0; k < 4; k++) {
                MatchTable table = tables.find(base | (k << 62));
                if (table == null) continue;
                doomed.addAll(table.posted);
                table.posted.clear();
                doomed.addAll(table.probes);
                table.probes.clear();
                table.watches.clear();
                table.retired.clear();
                for (Unexpected u : table.drainUnexpected()) {
                    if (u.selfSend() != null) doomed.add(u.selfSend());
                    else if (u.data() != null) releaseUnexpected(u);
                    else refusals.add(refuseRendezvous(u));
                }
            }
            if (closed) tables.closed(base);
        } finally {
            lock.unlock();
        }
        for (PeerLink l : links) {
            // left in their maps: a CTS that comes later finds the send done (the receiver is told), DATA is discarded
            for (SendRequest sr : l.awaitingCts.values()) if (baseId(sr.commId) == base) doomed.add(sr);
            for (RecvRequest rr : l.awaitingData.values()) if (baseId(rr.commId) == base) doomed.add(rr);
            l.queuedRequests(sr -> !sr.rma && baseId(sr.commId) == base, doomed);
            for (SendRequest sr : l.awaitingDone.values()) if (baseId(sr.commId) == base) doomed.add(sr);
        }
        for (Runnable r : refusals) r.run();
        for (Request<?> r : doomed) r.fail(error.get());
    }

    /**
     * Point-to-point ops on user channels (collectives are tracked above) that have been pending for at least
     * {@code thresholdNanos}. The time is counted from the first call of this method that saw the op (the watchdog
     * calls it every tick), so ops cost nothing for this until they wait.
     */
    List<PendingOp> pendingOps(long now, long thresholdNanos) {
        return pendingOps(now, thresholdNanos, true);
    }

    /**
     * The pending point-to-point ops; {@code watch}: the watchdog's look (it starts the clock of an op it sees the first
     * time, and returns only those pending {@code thresholdNanos}, once marked first), else a look that changes nothing
     * (every pending op, an op not seen before as having waited 0).
     */
    List<PendingOp> pendingOps(long now, long thresholdNanos, boolean watch) {
        List<Request<?>> all = new ArrayList<>();
        lock.lock();
        try {
            for (Map.Entry<Long, MatchTable> e : tables.entries()) {
                if ((e.getKey() >>> 62) != 0) continue;
                all.addAll(e.getValue().posted);
                all.addAll(e.getValue().probes);
            }
        } finally {
            lock.unlock();
        }
        for (PeerLink l : links) {
            for (SendRequest sr : l.awaitingCts.values()) if ((sr.commId >>> 62) == 0) all.add(sr);
            for (RecvRequest rr : l.awaitingData.values()) if ((rr.commId >>> 62) == 0) all.add(rr);
            l.queuedRequests(sr -> !sr.rma && (sr.commId >>> 62) == 0, all);
        }
        List<PendingOp> out = null;
        for (Request<?> r : all) {
            if (r.finished()) continue;
            if (r.seenAt == 0 && watch) {
                r.seenAt = now == 0 ? 1 : now;
                continue;
            }
            long waited = r.seenAt == 0 ? 0 : now - r.seenAt;
            if (waited < thresholdNanos) continue;
            boolean first = watch && !r.reported;
            if (watch) r.reported = true;
            if (out == null) out = new ArrayList<>();
            out.add(PendingOp.of(r, waited, first));
        }
        return out == null ? List.of() : out;
    }

    /** The table of {@code commId} (lock held). */
    private MatchTable table(long commId) {
        return tables.get(commId);
    }
}
