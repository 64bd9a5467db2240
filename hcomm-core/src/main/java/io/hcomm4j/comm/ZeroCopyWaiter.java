package io.hcomm4j.comm;

import io.hcomm4j.CommAbortedException;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.transport.SharedWait;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What a rank of a {@link ZeroCopyEngine} waits for (every rank's descriptor of an op, or every rank done with it),
 * as a {@link SharedWait} the transport's progress engine polls: spin, then block in the selector with the sleeping
 * flag set. Whoever changes a word others wait for fences and rings the doorbell of every peer whose flag it finds set
 * ({@link #wakeSleepers}). A wait that does not complete fails naming why: a failed peer, an abort, a closed session or
 * the ranks still missing at {@code HCOMM_TIMEOUT}.
 */
final class ZeroCopyWaiter implements SharedWait {
    /** Waiting for every rank's descriptor of the op. */
    static final int ARRIVE = 1;
    /** Waiting for every rank to be done with the op. */
    static final int DONE_PHASE = 2;
    /** Waiting for every rank to reach a step of a pipelined op (or to fail in it). */
    static final int STEP = 3;

    private static final VarHandle LONG = ZeroCopyEngine.LONG;
    private static final VarHandle INT = ZeroCopyEngine.INT;

    private final ZeroCopyEngine e;
    private final PeerTransport transport;
    private final int rank;
    private final int n;
    private final int[] world;
    private final long[] descAt;
    private final long timeoutNanos;

    private int phase;
    private long seq;
    /** The step word every rank must reach ({@link #STEP}). */
    private long step;
    /** Every rank below this one is ready (ranks are looked at in order, each until it is). */
    private int next;

    /** The op this rank waits in for other ranks now (for the stuck-op report), or null; its number and start. */
    private volatile String waitOp;
    private volatile long waitSeq;
    private volatile long waitSince;

    ZeroCopyWaiter(ZeroCopyEngine e, PeerTransport transport, int[] world, long[] descAt, long timeoutNanos) {
        this.e = e;
        this.transport = transport;
        this.rank = e.rank;
        this.n = e.n;
        this.world = world;
        this.descAt = descAt;
        this.timeoutNanos = timeoutNanos;
    }

    /** The current wait, or null (read by the stuck-op monitor): op, number, start, {@code bytes} and the world ranks not there yet. */
    ZeroCopyEngine.Wait current(long bytes) {
        String op = waitOp;
        if (op == null) return null;
        long s = waitSeq;
        List<Integer> missing = new ArrayList<>();
        for (int p = 0; p < n; p++) if (p != rank && !ready(p)) missing.add(world[p]);
        int[] peers = missing.stream().mapToInt(Integer::intValue).toArray();
        return new ZeroCopyEngine.Wait(op, s, waitSince, bytes, peers);
    }

    /** After a store others may wait for: wake every peer that sleeps (its flag is cleared here, so one bell per sleep). */
    void wakeSleepers() {
        MemorySegment ctrl = e.ctrl;
        VarHandle.fullFence(); // orders the store before the flag loads (the sleeper: flag store, fence, loads)
        for (int p = 0; p < n; p++) {
            if (p == rank) continue;
            long f = ControlLayout.slot(p) + ControlLayout.SLEEPING_OFFSET;
            if ((int) INT.getAcquire(ctrl, f) != 0 && INT.compareAndSet(ctrl, f, 1, 0)) transport.wake(world[p]);
        }
    }

    /**
     * Waits until every rank's step word is at least {@code step} or says it failed in op {@code seq} (the caller
     * looks at the error words).
     */
    void awaitStep(long seq, long step, String op) {
        this.step = step;
        await(STEP, seq, op);
    }

    /** Waits until every rank has arrived at op {@code seq} ({@link #ARRIVE}) or is done with it ({@link #DONE_PHASE}). */
    void await(int phase, long seq, String op) {
        this.phase = phase;
        this.seq = seq;
        this.next = 0;
        long now = System.nanoTime();
        long deadline = now + timeoutNanos;
        waitSeq = seq;
        waitSince = now;
        waitOp = op; // last: the stuck-op monitor reads it first
        boolean done;
        try {
            done = transport.await(this, deadline) && complete();
        } finally {
            waitOp = null;
        }
        if (done) return;
        // why it ended
        for (int p = 0; p < n; p++) {
            if (p != rank && transport.failed(world[p])) {
                PeerFailedException f = transport.failure(world[p], op + " (collective #" + seq + ", shared memory)");
                throw new PeerFailedException(f.getMessage(), List.of(p), f.getCause());
            }
        }
        String why = e.aborted;
        if (why != null) {
            throw new CommAbortedException("rank " + rank + ": " + op + " (collective #" + seq + ") failed: the communicator was aborted: " + why);
        }
        if (transport.isClosing() || e.closed) {
            throw new CommAbortedException("rank " + rank + ": " + op + " (collective #" + seq + ") failed: the session is closed");
        }
        List<Integer> missing = new ArrayList<>();
        for (int p = 0; p < n; p++) if (p != rank && !ready(p)) missing.add(p);
        throw new CommTimeoutException("rank " + rank + ": " + op + " (collective #" + seq + ", shared memory): rank(s) " + missing
                + (phase == ARRIVE ? " did not call it" : phase == STEP ? " did not keep up with it" : " did not finish it") + " within " + io.hcomm4j.Units.duration(timeoutNanos)
                + " (HCOMM_TIMEOUT)");
    }

    @Override
    public boolean done() {
        if (complete()) return true;
        // slow checks, only while something is missing
        if (transport.failures() != 0) {
            for (int p = 0; p < n; p++) if (p != rank && transport.failed(world[p])) return true;
        }
        return transport.isClosing() || e.closed || e.aborted != null;
    }

    private boolean complete() {
        while (next < n) {
            if (next != rank && !ready(next)) return false;
            next++;
        }
        return true;
    }

    private boolean ready(int p) {
        MemorySegment ctrl = e.ctrl;
        long s = ControlLayout.slot(p);
        if (phase == DONE_PHASE) return (long) LONG.getAcquire(ctrl, s + ControlLayout.DONE_OFFSET) >= seq;
        if (phase == STEP) {
            return (long) LONG.getAcquire(ctrl, s + ControlLayout.STEP_OFFSET) >= step
                    || (long) LONG.getAcquire(ctrl, s + ControlLayout.ERROR_OFFSET) == seq;
        }
        // the other parity first: a peer writes its descriptor of seq before the next one (and the one after that
        // only once this rank has published its next), so seeing a later seq there means this one shows here
        long t = e.opTicket();
        long other = ControlLayout.descriptor(p, t + 1);
        long mine = ControlLayout.descriptor(p, t);
        long so = (long) LONG.getAcquire(ctrl, other + ControlLayout.SEQ_OFFSET);
        long sm = (long) LONG.getAcquire(ctrl, mine + ControlLayout.SEQ_OFFSET);
        if (sm == seq) {
            descAt[p] = mine;
            return true;
        }
        if (so == seq) {
            descAt[p] = other;
            return true;
        }
        if (sm > seq || so > seq) {
            descAt[p] = -1; // the peer is past this op: it never came here
            return true;
        }
        return false;
    }

    @Override
    public boolean arm() {
        INT.setVolatile(e.ctrl, ControlLayout.slot(rank) + ControlLayout.SLEEPING_OFFSET, 1);
        VarHandle.fullFence();
        return done();
    }

    @Override
    public void disarm() {
        INT.setRelease(e.ctrl, ControlLayout.slot(rank) + ControlLayout.SLEEPING_OFFSET, 0);
    }
}
