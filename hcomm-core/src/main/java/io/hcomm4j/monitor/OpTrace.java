package io.hcomm4j.monitor;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The flight recorder of one communicator on one rank: a ring of the last {@code capacity} ops (collective, point to
 * point, one-sided), each from its call to its end (HCOMM_TRACE_BUFFER; PyTorch's flight recorder keeps the same per
 * process group). The slots are made once: recording an op writes fields into one of them and allocates nothing.
 *
 * <p>An op takes a ticket when it is called ({@link #open}), the index of its slot in the ring's history; it is
 * {@link #started} when it begins to run and {@link #ended} once. Several threads record at once (a stream's worker,
 * the collective thread, callers of point-to-point ops), each on its own slot. A reader ({@link #entries}) copies the
 * slots under a per-slot sequence lock: a slot being written is read again, and one reused by a newer op while its old
 * op still runs stops taking that old op's updates (the ticket no longer matches), so a dump never shows a torn entry.
 */
public final class OpTrace {
    /** What kind of op a record is. */
    public enum Kind { COLLECTIVE, P2P, ONE_SIDED }

    /** Where an op is in its life. */
    public enum State {
        /** Called, waiting for its turn (a stream, the collective thread, or an earlier collective). */
        SCHEDULED,
        /** Running: it moves data or waits for its peers. */
        STARTED,
        /** Ended well. */
        COMPLETED,
        /** Ended with an exception. */
        FAILED;

        /** The name in a dump: lower case. */
        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final long commId;
    private final int rank;
    private final int size;
    private final Slot[] ring;
    private final int mask;
    private final AtomicLong next = new AtomicLong();
    /** A wall-clock time and the nanoTime read with it: the dump's times are epoch nanoseconds. */
    private final long epochNanosAtOrigin;
    private final long nanoOrigin;

    /**
     * @param capacity ops kept, rounded up to a power of two; 0 records nothing
     * @throws IllegalArgumentException if capacity is negative or above 2^24
     */
    public OpTrace(long commId, int rank, int size, int capacity) {
        if (capacity < 0 || capacity > 1 << 24) {
            throw new IllegalArgumentException("trace capacity (HCOMM_TRACE_BUFFER) must be in [0, 16777216], was " + capacity);
        }
        this.commId = commId;
        this.rank = rank;
        this.size = size;
        int n = Integer.bitCount(capacity) <= 1 ? capacity : Integer.highestOneBit(capacity) << 1;
        ring = new Slot[n];
        for (int i = 0; i < n; i++) ring[i] = new Slot();
        mask = n - 1;
        nanoOrigin = System.nanoTime();
        java.time.Instant now = java.time.Instant.now();
        epochNanosAtOrigin = now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    /** False when HCOMM_TRACE_BUFFER is 0: {@link #open} returns -1 and the other calls do nothing. */
    public boolean enabled() {
        return ring.length > 0;
    }

    /** The number of slots (a power of two, or 0). */
    public int capacity() {
        return ring.length;
    }

    /** Ops recorded since the communicator began (those before the last {@link #capacity()} are gone). */
    public long recorded() {
        return next.get();
    }

    public long commId() {
        return commId;
    }

    public int rank() {
        return rank;
    }

    public int size() {
        return size;
    }

    /**
     * Records an op that was just called: its ticket for {@link #started} and {@link #ended}, or -1 if nothing is
     * recorded. {@code seq}: a collective's sequence number, or -1; {@code peer}: a point-to-point op's peer, a rooted
     * collective's root, a one-sided op's target, else -1; {@code tag}: a point-to-point tag, else -1; {@code type} and
     * {@code reduction} may be null; {@code fingerprint}: what ranks compare to find a mismatch (0: none).
     */
    public long open(Kind kind, String op, long seq, int peer, int tag, String type, String reduction, long count, long bytes,
                     int fingerprint, int stream, State state) {
        return open(kind, op, seq, peer, tag, type, reduction, count, bytes, fingerprint, stream, state, 0);
    }

    /** As above, called at {@code nowNanos} ({@link System#nanoTime()} read by the caller already; 0: read it now). */
    public long open(Kind kind, String op, long seq, int peer, int tag, String type, String reduction, long count, long bytes,
                     int fingerprint, int stream, State state, long nowNanos) {
        if (ring.length == 0) return -1;
        long now = nowNanos != 0 ? nowNanos : System.nanoTime();
        Slot s = take(kind, op, seq, peer, tag, type, reduction, count, bytes, fingerprint, stream, state, now);
        long ticket = s.ticket;
        s.unlock();
        return ticket;
    }

    /**
     * Records a point-to-point op that had ended when it was recorded (an eager send): the whole record in one write,
     * its end at its call time.
     */
    public void openEnded(Kind kind, String op, int peer, int tag, long bytes, String path, int channels, Throwable failure) {
        if (ring.length == 0) return;
        long now = System.nanoTime();
        Slot s = take(kind, op, -1, peer, tag, null, null, -1, bytes, 0, 0, State.STARTED, now);
        s.end(now, null, path, channels, failure);
        s.unlock();
    }

    /** The next ticket's slot, locked, filled as an op called at {@code now}: the caller finishes it and unlocks it. */
    private Slot take(Kind kind, String op, long seq, int peer, int tag, String type, String reduction, long count, long bytes,
                      int fingerprint, int stream, State state, long now) {
        long ticket = next.getAndIncrement();
        Slot s = ring[(int) (ticket & mask)];
        s.lock();
        s.ticket = ticket;
        s.kind = kind;
        s.op = op;
        s.seq = seq;
        s.peer = peer;
        s.tag = tag;
        s.type = type;
        s.reduction = reduction;
        s.count = count;
        s.bytes = bytes;
        s.fingerprint = fingerprint;
        s.stream = stream;
        s.state = state;
        s.calledNanos = now;
        s.startedNanos = state == State.SCHEDULED ? 0 : now;
        s.endedNanos = 0;
        s.algorithm = null;
        s.path = null;
        s.channels = 0;
        s.failure = null;
        return s;
    }

    /** The op of {@code ticket} began to run now. */
    public void started(long ticket) {
        if (ticket < 0) return;
        Slot s = ring[(int) (ticket & mask)];
        s.lock();
        if (s.ticket == ticket) {
            s.state = State.STARTED;
            s.startedNanos = System.nanoTime();
        }
        s.unlock();
    }

    /**
     * The op of {@code ticket} ended: {@code failure} null if well; {@code algorithm} the algorithm it ran, as the
     * tuner's constant (null: its op has one); {@code path} how its data moved ({@code zero_copy}, {@code transport}, {@code shm}, {@code tcp} …).
     */
    public void ended(long ticket, Enum<?> algorithm, String path, Throwable failure) {
        ended(ticket, algorithm, path, 0, failure);
    }

    /**
     * As {@link #ended(long, Enum, String, Throwable)}, with {@code channels}: the most links (TCP connections to one
     * peer) one of its messages went over; 0: its data moved over no link (shared memory directly, or nothing moved).
     */
    public void ended(long ticket, Enum<?> algorithm, String path, int channels, Throwable failure) {
        ended(ticket, algorithm, path, channels, failure, 0);
    }

    /** As above, ended at {@code endNanos} ({@link System#nanoTime()} read by the caller already; 0: read it now). */
    public void ended(long ticket, Enum<?> algorithm, String path, int channels, Throwable failure, long endNanos) {
        if (ticket < 0) return;
        Slot s = ring[(int) (ticket & mask)];
        long now = endNanos != 0 ? endNanos : System.nanoTime();
        s.lock();
        if (s.ticket == ticket) s.end(now, algorithm, path, channels, failure);
        s.unlock();
    }

    /**
     * A point-to-point op of {@code ticket} ended: as {@link #ended(long, Enum, String, int, Throwable)}, with the
     * peer and size a receive matched ({@code matchedPeer} -1: as recorded), at {@code endNanos} ({@link System#nanoTime()}:
     * the transport reads it once per poll pass); 0: it had ended before it was recorded (an eager send, a receive
     * whose message was there), and its end is its call time, without a second read of the clock (which costs as
     * much as the rest of the record).
     */
    public void p2pEnded(long ticket, String path, int channels, Throwable failure, int matchedPeer, long matchedBytes, long endNanos) {
        if (ticket < 0) return;
        Slot s = ring[(int) (ticket & mask)];
        s.lock();
        if (s.ticket == ticket) {
            if (matchedPeer >= 0) {
                s.peer = matchedPeer;
                s.bytes = matchedBytes;
            }
            s.end(endNanos != 0 ? endNanos : s.calledNanos, null, path, channels, failure);
        }
        s.unlock();
    }

    /**
     * The op of {@code ticket}, which ended well here, turns out to have failed: a peer's message showed after its
     * end that the ranks called it differently (a rooted op with another root, where this rank's part needed nothing
     * from the odd one). The call returned normally; its record says what went wrong, for {@code hcomm trace}.
     */
    public void failedLate(long ticket, Throwable failure) {
        if (ticket < 0) return;
        Slot s = ring[(int) (ticket & mask)];
        s.lock();
        if (s.ticket == ticket && s.failure == null) {
            s.failure = failure;
            s.state = State.FAILED;
        }
        s.unlock();
    }

    /** Epoch nanoseconds of a {@link System#nanoTime()} reading of this JVM (0 stays 0). */
    long epochNanos(long nanoTime) {
        return nanoTime == 0 ? 0 : epochNanosAtOrigin + (nanoTime - nanoOrigin);
    }

    /** The ops kept now, oldest first (a copy: the ring goes on). */
    public List<TraceEntry> entries() {
        List<TraceEntry> out = new ArrayList<>(ring.length);
        long end = next.get();
        long from = Math.max(0, end - ring.length);
        long now = System.nanoTime();
        for (long t = from; t < end; t++) {
            TraceEntry e = ring[(int) (t & mask)].read(t, this, now);
            if (e != null) out.add(e);
        }
        return out;
    }

    /**
     * One slot. {@code version} is odd while a writer changes the fields (a sequence lock, as the Linux kernel's
     * seqlock): writers take it with a CAS from even to odd, so two updates of one slot never interleave; a reader
     * copies the fields between two reads of the same even version.
     */
    private static final class Slot {
        private static final java.lang.invoke.VarHandle VERSION;

        static {
            try {
                VERSION = java.lang.invoke.MethodHandles.lookup().findVarHandle(Slot.class, "version", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private volatile long version;
        long ticket = -1;
        Kind kind;
        String op;
        long seq;
        int peer;
        int tag;
        String type;
        String reduction;
        long count;
        long bytes;
        int fingerprint;
        int stream;
        State state;
        long calledNanos;
        long startedNanos;
        long endedNanos;
        /** An enum, named at read time (lower case) so that recording allocates nothing. */
        Enum<?> algorithm;
        String path;
        int channels;
        Throwable failure;

        void lock() {
            for (int spins = 0; ; spins++) {
                long v = version;
                if ((v & 1) == 0 && VERSION.compareAndSet(this, v, v + 1)) return;
                // another writer holds it for a few field writes; past a few hundred turns it was descheduled
                if (spins < 100) Thread.onSpinWait();
                else Thread.yield();
            }
        }

        /**
         * Ends the op held here at {@code now} (the slot locked): {@code failure} null if well, unless {@link OpTrace#failedLate}
         * marked it failed already, which stays.
         */
        void end(long now, Enum<?> algorithm, String path, int channels, Throwable failure) {
            if (startedNanos == 0) startedNanos = now;
            endedNanos = now;
            this.algorithm = algorithm;
            this.path = path;
            this.channels = channels;
            if (failure != null || this.failure == null) this.failure = failure;
            state = this.failure == null ? State.COMPLETED : State.FAILED;
        }

        void unlock() {
            VERSION.setRelease(this, version + 1);
        }

        /** The entry of {@code wanted}, or null if the slot now holds another op (or was never written). */
        TraceEntry read(long wanted, OpTrace trace, long now) {
            for (int attempt = 0; attempt < 1000; attempt++) {
                long v = (long) VERSION.getAcquire(this);
                if ((v & 1) != 0) {
                    Thread.onSpinWait();
                    continue;
                }
                long tk = ticket;
                Kind k = kind;
                String o = op;
                long sq = seq;
                int pr = peer;
                int tg = tag;
                String ty = type;
                String rd = reduction;
                long ct = count;
                long by = bytes;
                int fp = fingerprint;
                int st = stream;
                State sa = state;
                long c = calledNanos;
                long s = startedNanos;
                long e = endedNanos;
                Enum<?> al = algorithm;
                String pa = path;
                int ch = channels;
                Throwable f = failure;
                java.lang.invoke.VarHandle.acquireFence();
                if ((long) VERSION.getVolatile(this) != v) continue;
                if (tk != wanted || k == null) return null;
                String error = f == null ? null : f.getClass().getSimpleName() + ": " + f.getMessage();
                List<Integer> failedRanks = f instanceof io.hcomm4j.PeerFailedException pf ? pf.failedRanks() : List.of();
                long runFrom = s == 0 ? c : s;
                long durationNanos = e != 0 ? e - runFrom : now - runFrom;
                String alName = al == null ? null : al.name().toLowerCase(java.util.Locale.ROOT);
                return new TraceEntry(tk, trace.commId, k, o, sq, pr, tg, ty, rd, ct, by, fp, st, alName, pa, ch, sa,
                        trace.epochNanos(c), trace.epochNanos(s), trace.epochNanos(e), durationNanos, error, failedRanks);
            }
            return null;
        }
    }
}
