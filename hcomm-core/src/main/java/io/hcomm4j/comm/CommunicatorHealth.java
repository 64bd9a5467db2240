package io.hcomm4j.comm;

import io.hcomm4j.CommAbortedException;
import io.hcomm4j.Health;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.transport.PeerTransport;
import java.util.BitSet;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * One communicator's failure state: READY, DEGRADED (members failed) or FAILED (aborted, or this rank declared
 * failed), its listeners, and the transport collectives running now (the stuck-op registry), which a failure fails
 * at once so nobody waits for a peer that will never answer.
 */
final class CommunicatorHealth {
    private final CommunicatorImpl comm;
    private final Session session;
    private final PeerTransport transport;
    private final int rank;
    private final int size;

    private final Object lock = new Object();
    private volatile Health health = Health.READY;
    /** Members (communicator ranks) known to be gone, failed or closed; guarded by {@link #lock}. */
    private final TreeSet<Integer> failedMembers = new TreeSet<>();
    /** Whether a gone member failed (not only closed in order): then new collectives fail at once; guarded by {@link #lock}. */
    private boolean anyFailed;
    /** How each gone member went: "rank 2 failed: its connection broke", "rank 1 closed its session"; guarded by {@link #lock}. */
    private final java.util.Map<Integer, String> goneWhy = new java.util.HashMap<>();
    /** Why the communicator cannot be used at all (aborted, or this rank declared failed), or null. */
    private volatile String abortedWhy;
    private final Set<TransportLinks> running = ConcurrentHashMap.newKeySet();
    private final CopyOnWriteArrayList<Consumer<Health>> listeners = new CopyOnWriteArrayList<>();

    CommunicatorHealth(CommunicatorImpl comm, Session session, PeerTransport transport, int rank, int size) {
        this.comm = comm;
        this.session = session;
        this.transport = transport;
        this.rank = rank;
        this.size = size;
    }

    Health health() {
        return health;
    }

    void addListener(Consumer<Health> listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    void removeListener(Consumer<Health> listener) {
        listeners.remove(listener);
    }

    /** The transport collectives running now. */
    Collection<TransportLinks> running() {
        return running;
    }

    /**
     * Registers {@code links} as running, then fails it and throws if the communicator is already broken: registered
     * first, so a failure that becomes known meanwhile fails it either here or through {@link #onMemberFailed}.
     */
    void register(TransportLinks links) {
        running.add(links);
        RuntimeException broken = brokenFor(links.op(), " (collective #" + links.seq() + ")");
        if (broken == null) return;
        links.abort(broken);
        throw TransportLinks.fresh(broken);
    }

    void unregister(TransportLinks links) {
        running.remove(links);
    }

    /** The exception a new op gets when the communicator is aborted or has failed members, else null. */
    RuntimeException brokenFor(String op, String which) {
        String aborted = abortedWhy;
        if (aborted != null) {
            return new CommAbortedException("rank " + rank + ": " + op + which + ": the communicator was aborted: " + aborted);
        }
        Health h = health;
        // a member that only closed its session may have left what this op needs (a broadcast root's data, a leaf's
        // contribution) already here: the op runs, and fails where it needs the member and finds it gone
        if (h.state() == Health.State.DEGRADED && anyFailed) return peersFailed(op, which, h.failedRanks(), null);
        return null;
    }

    /** Point to point only fails once the communicator is aborted (a failed peer fails its own messages). */
    void checkNotAborted(String op) {
        String aborted = abortedWhy;
        if (aborted != null) {
            throw new CommAbortedException("rank " + rank + ": " + op + ": the communicator was aborted: " + aborted);
        }
    }

    /**
     * Makes the communicator FAILED: every pending op on it fails with {@link CommAbortedException}, later ones too.
     * Returns false if it was already.
     */
    boolean markAborted(String why, ZeroCopyEngine zc) {
        Health now;
        synchronized (lock) {
            if (abortedWhy != null) return false;
            abortedWhy = why;
            now = new Health(Health.State.FAILED, List.copyOf(failedMembers), why);
            health = now;
        }
        String msg = "rank " + rank + ": the communicator was aborted: " + why;
        for (TransportLinks l : running) l.abort(new CommAbortedException("rank " + rank + ": " + l.op()
                + " (collective #" + l.seq() + ") failed: the communicator was aborted: " + why));
        transport.failCommunicator(comm.id(), () -> new CommAbortedException(msg));
        if (zc != null) zc.abort(why);
        session.healthChanged(comm, now, listeners);
        return true;
    }

    /**
     * World rank {@code w} failed: if it is a member, the communicator is DEGRADED (FAILED stays FAILED), and every
     * running collective fails with {@link PeerFailedException} naming every member that is gone.
     */
    void onMemberFailed(int w, String why) {
        memberGone(w, "failed: " + why, true);
    }

    /**
     * World rank {@code w} closed its session in order: if it is a member, the communicator is DEGRADED as for a failure,
     * but collectives, running or new, are left to run: what the member sent before it closed is delivered (a broadcast
     * root or a reduce's leaf is done with an op before the others start it), and a wait on it fails by itself. A FAILED communicator is left as it is: nothing works on
     * it anyway, and its members close it one after another.
     */
    void onMemberLeft(int w) {
        memberGone(w, "closed its session", false);
    }

    private void memberGone(int w, String how, boolean failRunning) {
        int r = comm.commRank(w);
        if (r < 0) return;
        Health now;
        List<Integer> gone;
        String reason = "rank " + r + " " + how;
        synchronized (lock) {
            if ((!failRunning && abortedWhy != null) || !failedMembers.add(r)) return;
            goneWhy.put(r, reason);
            if (failRunning) anyFailed = true;
            gone = List.copyOf(failedMembers);
            now = abortedWhy != null ? new Health(Health.State.FAILED, gone, abortedWhy)
                    : new Health(Health.State.DEGRADED, gone, reason);
            health = now;
        }
        if (failRunning) {
            for (TransportLinks l : running) l.abort(peersFailed(l.op(), " (collective #" + l.seq() + ")", gone, null));
        }
        session.healthChanged(comm, now, listeners);
    }

    /**
     * Waits up to {@code limit} for a member to be known failed here; a PeerFailedException naming those members
     * (communicator ranks, {@code cause} its cause), or null if none shows first or {@code stop} turns true.
     */
    PeerFailedException failureWithin(java.time.Duration limit, RuntimeException cause, java.util.function.BooleanSupplier stop) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (true) {
            BitSet failed = knownFailed();
            if (!failed.isEmpty()) {
                return new PeerFailedException("rank " + rank + ": " + cause.getMessage() + ", as " + (failed.cardinality() == 1
                        ? "rank " + failed.nextSetBit(0) + " failed" : "ranks " + failed + " failed"), failed.stream().boxed().toList(), cause);
            }
            if (System.nanoTime() - deadline >= 0 || abortedWhy != null || stop.getAsBoolean()) return null;
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
    }

    /** Members known here to have failed (communicator ranks): its failed members and the transport's failed ranks. */
    BitSet knownFailed() {
        BitSet b = new BitSet(size);
        synchronized (lock) {
            for (int r : failedMembers) b.set(r);
        }
        for (int w : transport.failedRanks()) {
            int r = comm.commRank(w);
            if (r >= 0) b.set(r);
        }
        return b;
    }

    /**
     * Op {@code seq} fails as a whole because a peer failed, naming every member known to have failed, in this
     * communicator's ranks; {@code e} names them as communicator ranks ({@code commRanks}: the zero-copy engine) or as
     * world ranks (the transport).
     */
    PeerFailedException opFailure(long seq, String op, PeerFailedException e, boolean commRanks) {
        String which = " (collective #" + seq + ")";
        if (e.getMessage() != null && e.getMessage().contains(which + " on a communicator")) return e;
        TreeSet<Integer> failed = new TreeSet<>(health.failedRanks());
        for (int named : e.failedRanks()) {
            int r = commRanks ? (named >= 0 && named < size ? named : -1) : comm.commRank(named);
            if (r < 0) continue;
            if (failed.add(r)) {
                String known = transport.failureReason(commRanks ? comm.world(r) : named);
                synchronized (lock) {
                    goneWhy.putIfAbsent(r, known != null ? "rank " + r + " failed: " + known : "rank " + r + " failed ("
                            + e.getMessage() + ")");
                }
            }
        }
        return peersFailed(op, which, List.copyOf(failed), e);
    }

    /** At most this many gone members are described one by one in a message (the rest are counted). */
    private static final int DESCRIBED_MAX = 4;

    /**
     * "rank 0: allReduce (collective #5) on a communicator of 4 ranks cannot complete: rank 1 closed its session; rank 2
     * failed: its connection broke": what failed, where, and how each member went, each said once.
     */
    private PeerFailedException peersFailed(String op, String which, List<Integer> gone, Throwable cause) {
        StringBuilder why = new StringBuilder();
        synchronized (lock) {
            for (int i = 0; i < gone.size() && i < DESCRIBED_MAX; i++) {
                if (i > 0) why.append("; ");
                why.append(goneWhy.getOrDefault(gone.get(i), "rank " + gone.get(i) + " failed"));
            }
        }
        if (gone.size() > DESCRIBED_MAX) why.append("; and ").append(gone.size() - DESCRIBED_MAX).append(" more ranks are gone ").append(gone);
        return new PeerFailedException("rank " + rank + ": " + op + which + " on a communicator of " + size
                + " ranks cannot complete: " + why, gone, cause);
    }
}
