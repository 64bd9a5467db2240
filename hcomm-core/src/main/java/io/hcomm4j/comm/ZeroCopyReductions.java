package io.hcomm4j.comm;

import static io.hcomm4j.comm.ControlLayout.F_CAPABLE;
import static io.hcomm4j.comm.ControlLayout.F_IN_PLACE;
import static io.hcomm4j.comm.ControlLayout.F_ONE_STEP;
import static io.hcomm4j.comm.ControlLayout.F_RECV;
import static io.hcomm4j.comm.ControlLayout.F_SAFE;
import static io.hcomm4j.comm.ControlLayout.F_SEND;
import static io.hcomm4j.comm.ControlLayout.F_SLICED;
import static io.hcomm4j.comm.ControlLayout.F_STAGED;
import static io.hcomm4j.comm.ControlLayout.F_WANT;

import io.hcomm4j.algo.ZeroCopyCollectives;
import io.hcomm4j.kernel.ReduceKernel;
import io.hcomm4j.memory.MemoryPool;
import java.lang.foreign.MemorySegment;

/**
 * The reductions of a {@link ZeroCopyEngine}: all-reduce, reduce-scatter(V) and reduce. Rank {@code r} reduces slice
 * (or block) {@code r} of every rank's send buffer, in rank order, through a private scratch chunk, and writes it into
 * the receive buffer(s); unregistered memory is staged through the engine's registered buffer. Each op publishes its
 * descriptor, falls back (returns false) when some rank cannot run it here, else does its part between the engine's
 * {@code arrive} and {@code finish} (see {@link ZeroCopyEngine} for the protocol and its memory ordering).
 */
final class ZeroCopyReductions extends ZeroCopyOps {
    /** Private scratch chunk reductions go through (stays in L1/L2). */
    private final MemorySegment scratch;
    /** Large all-reduces of unregistered memory, chunk by chunk. */
    private final ZeroCopyPipeline pipeline;

    ZeroCopyReductions(ZeroCopyEngine e) {
        super(e);
        this.scratch = e.scratch;
        this.pipeline = new ZeroCopyPipeline(e);
    }

    /**
     * All-reduce of {@code count} elements. Returns true if it ran here; false if the caller must run the transport
     * algorithm (under the same ticket, before {@link ZeroCopyEngine#leave}).
     */
    boolean allReduce(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long count, ReduceKernel k,
                      int avg, boolean want) {
        if (!e.ready(op)) return false;
        long bytes = count * k.type().byteSize();
        // a rank takes one step or the usual ones, and says which (F_ONE_STEP, F_SLICED): ranks whose limits differ
        // (their hosts' oversubscription seen differently), or any rank without capable && want, make all fall back
        if (bytes > 0 && bytes <= e.oneStepMax() && e.capable && want) {
            return oneStep(seq, fp, op, send, recv, count, k, avg, bytes);
        }
        int flags = e.base(want) | F_SLICED;
        MemorySegment out = recv;
        boolean sendIn = e.where(send, bytes);
        boolean recvIn = e.where(recv, bytes);
        boolean unregistered = e.capable && want && !(sendIn && recvIn);
        MemorySegment userRecv = null;
        if (unregistered && bytes >= MemoryPool.ADOPT_MIN_BYTES && adopt(send, sendIn, recv, recvIn, bytes)) {
            // the caller's reused buffers, moved into shared memory in place: then as registered ones
            if (adoptedRecv != recv) userRecv = recv;
            send = adoptedSend;
            recv = adoptedRecv;
            unregistered = false;
        }
        // large: chunk by chunk through a small ring; else whole through a staging buffer
        MemorySegment ring = unregistered && ZeroCopyPipeline.fits(send, recv, bytes) ? e.buffers.staging(ZeroCopyPipeline.RING) : null;
        MemorySegment staged = unregistered && ring == null ? e.buffers.staging(bytes) : null;
        if (ring != null) {
            flags |= F_STAGED | F_SAFE | e.sendAt(ring, 0, ZeroCopyPipeline.RING) | e.recvAt(ring, 0, ZeroCopyPipeline.RING);
        } else {
            if (staged != null) {
                // heap arrays and other unregistered memory: through a registered buffer of this rank, in place
                MemorySegment.copy(send, 0, staged, 0, bytes);
                send = staged;
                recv = staged;
            }
            flags |= e.sendAt(send, 0, bytes);
            flags |= e.recvAt(recv, 0, bytes);
            if (sameOrDisjoint(send, recv, bytes)) flags |= F_SAFE;
            if (sameAddress(send, 0, recv, 0)) flags |= F_IN_PLACE;
        }
        int all = e.arrive(seq, fp, op, flags);
        int need = F_CAPABLE | F_WANT | F_SEND | F_RECV | F_SAFE | F_SLICED;
        if ((all & need) != need) return e.fellBack();
        if (ring != null || pipeline.anyStaged()) {
            pipeline.allReduce(seq, op, send, recv, ring, count, k, avg);
            if (userRecv != null) e.pool.syncAdopted(userRecv, recv, bytes, false);
            return true;
        }
        boolean ok = false;
        try {
            e.map(true, send, bytes);
            e.map(false, recv, bytes);
            // in place on every rank, each output line was just read as an input and is still in the cache, so small
            // chunks write it there (no extra read) and reading and writing back overlap in one pass; out of place,
            // outputs are written with streaming copies of large chunks instead
            MemorySegment big = (all & F_IN_PLACE) != 0 ? null : e.buffers.bigScratch(bytes / n);
            ZeroCopyCollectives.allReduce(sendSeg, sendOff, recvSeg, recvOff, rank, n, count, k, avg, scratch, big);
            ok = true;
        } finally {
            e.finish(seq, op, ok);
        }
        // every rank is done writing into the staging buffer (finish waited), and none starts the next op before this
        // rank arrives at it
        if (staged != null) MemorySegment.copy(staged, 0, out, 0, bytes);
        if (userRecv != null) e.pool.syncAdopted(userRecv, recv, bytes, false);
        return true;
    }

    /** The views of the last {@link #adopt}: fields, so an op allocates nothing for them. */
    private MemorySegment adoptedSend;
    private MemorySegment adoptedRecv;

    /**
     * True if {@code send} and {@code recv} are registered ({@code sendIn}, {@code recvIn}) or adopted ({@link io.hcomm4j.memory.MemoryPool#adopted}):
     * their views (or themselves) are then in {@link #adoptedSend} and {@link #adoptedRecv}, the send buffer's end
     * pieces synced into its view. Out of line, so the op's own method stays as small for the JIT as before adoption.
     */
    private boolean adopt(MemorySegment send, boolean sendIn, MemorySegment recv, boolean recvIn, long bytes) {
        if (!sameOrDisjoint(send, recv, bytes)) return false;
        MemorySegment s = sendIn ? send : e.pool.adopted(send, bytes);
        MemorySegment r = sameAddress(send, 0, recv, 0) ? s : recvIn ? recv : e.pool.adopted(recv, bytes);
        if (s == null || r == null) return false;
        if (s != send) e.pool.syncAdopted(send, s, bytes, true);
        adoptedSend = s;
        adoptedRecv = r;
        return true;
    }

    /**
     * A small all-reduce in one step: each rank copies its input into a registered slot (by op parity), arrives, and
     * reduces all of every rank's slot itself, in rank order, into its own receive buffer (any memory: no peer writes
     * it); then it leaves without waiting for the others. One synchronisation instead of two (arrive, finish), which with
     * more ranks than cores saves a round of context switches. A slot is written again two ops later: by then every
     * rank has arrived at the op between, so it is done reading it (checked: its done word, free in the usual case).
     * Every rank computes the same bits: the same inputs, in the same order, as the sliced reduction.
     */
    private boolean oneStep(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long count, ReduceKernel k,
                            int avg, long bytes) {
        int parity = (int) (seq & 1);
        if (slotSeq[parity] > 0) e.awaitDone(slotSeq[parity], op);
        MemorySegment slot = e.buffers.slot(parity);
        int flags = e.base(true) | F_SAFE | F_ONE_STEP;
        if (slot != null) {
            MemorySegment.copy(send, 0, slot, 0, bytes);
            flags |= e.sendAt(slot, 0, bytes);
        }
        int all = e.arrive(seq, fp, op, flags);
        int need = F_CAPABLE | F_WANT | F_SEND | F_SAFE | F_ONE_STEP;
        if ((all & need) != need) return e.fellBack();
        slotSeq[parity] = seq;
        boolean ok = false;
        try {
            pauseForTest();
            e.map(true, slot, bytes);
            // through the private scratch, chunk by chunk: the kernels only ever see off-heap memory (a heap receive
            // buffer in their type profiles slowed every vector kernel of the JVM)
            ZeroCopyCollectives.reduceScatter(sendSeg, sendOff, n, 0, count, recv, 0, k, avg, scratch);
            ok = true;
        } finally {
            e.finishAlone(seq, ok);
        }
        return true;
    }

    /**
     * All-reduces up to this size go in one step: 4 KiB where ranks have cores to themselves (above it two steps are
     * faster again: 2 ranks, 16 KiB, 6.4-7.0 µs in one step, 2.8-3.9 in two), 16 KiB where they outnumber the cores
     * (4 ranks on 2 cores, 16 KiB: 16-32 µs in one step against 29-115, because one synchronisation fewer is one round of
     * context switches fewer).
     */
    static final long ONE_STEP_MAX = 4 * 1024;
    static final long ONE_STEP_MAX_OVERSUBSCRIBED = ZeroCopyStaging.SLOT_MAX;

    /** The seq of the op that last used each input slot (0: none yet). */
    private final long[] slotSeq = new long[2];

    /** The last one-step all-reduce, whose input slot peers may still be reading (0: none yet). */
    long lastOneStep() {
        return Math.max(slotSeq[0], slotSeq[1]);
    }

    /** Test hook: milliseconds a one-step all-reduce sleeps between arriving and reading the peers' slots (0: none). */
    volatile long readDelayMillisForTest;

    private void pauseForTest() {
        long ms = readDelayMillisForTest;
        if (ms <= 0) return;
        try {
            Thread.sleep(ms);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Reduce-scatter: block {@code r} (elements {@code [at(r), at(r+1))} of the send buffers) goes to rank {@code r}. With
     * {@code counts == null} every block has {@code blockCount} elements; else block {@code r} has {@code counts[r]}.
     */
    boolean reduceScatter(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long blockCount, long[] counts,
                          ReduceKernel k, int avg, boolean want) {
        if (!e.ready(op)) return false;
        int es = k.type().byteSize();
        long from = 0;
        long total = 0;
        for (int r = 0; r < n; r++) {
            long c = counts == null ? blockCount : counts[r];
            if (r == rank) from = total;
            total += c;
        }
        long mine = counts == null ? blockCount : counts[rank];
        long totalBytes = total * es;
        int flags = e.base(want);
        // this rank writes its receive buffer while the others read every block of its send buffer but its own
        send = e.offer(send, 0, totalBytes, want, disjoint(recv, 0, mine * es, send, totalBytes) || sameAddress(send, from * es, recv, 0));
        flags |= e.sendAt(send, 0, totalBytes);
        if (disjoint(recv, 0, mine * es, send, totalBytes) || sameAddress(send, from * es, recv, 0)) flags |= F_SAFE;
        int all = e.arrive(seq, fp, op, flags);
        int need = F_CAPABLE | F_WANT | F_SEND | F_SAFE;
        if ((all & need) != need) return e.fellBack();
        boolean ok = false;
        try {
            e.map(true, send, totalBytes);
            ZeroCopyCollectives.reduceScatter(sendSeg, sendOff, n, from, from + mine, recv, 0, k, avg, scratch,
                    e.buffers.bigScratch(mine * k.type().byteSize()));
            ok = true;
        } finally {
            e.finish(seq, op, ok);
        }
        return true;
    }

    /**
     * Reduce to {@code root}: like the all-reduce, rank {@code r} reduces slice {@code r} of every rank's send buffer (in
     * rank order), but writes it into the root's receive buffer only. Unregistered memory is staged: a send buffer in the
     * first half of this rank's staging buffer, the root's receive buffer in the second (copied out once all are done).
     */
    boolean reduce(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long count, ReduceKernel k, int avg,
                   int root, boolean want) {
        if (!e.ready(op)) return false;
        int es = k.type().byteSize();
        long bytes = count * es;
        int flags = e.base(want);
        MemorySegment in = send;
        MemorySegment out = rank == root ? recv : null;
        long outOff = 0;
        boolean sendReg = e.where(send, bytes);
        boolean recvReg = rank != root || e.where(recv, bytes);
        MemorySegment staged = null;
        if (e.capable && want && bytes > 0 && !(sendReg && recvReg)) {
            staged = e.buffers.staging(2 * bytes);
            if (staged != null) {
                if (!sendReg) {
                    MemorySegment.copy(send, 0, staged, 0, bytes);
                    in = staged;
                }
                if (!recvReg) {
                    out = staged;
                    outOff = bytes;
                }
            }
        }
        flags |= e.sendAt(in, 0, bytes);
        flags |= rank != root ? F_RECV : e.recvAt(out, outOff, bytes);
        // the root's own slices are read (send) and written (recv) by the same rank; other overlaps would race
        if (rank != root || sameAddress(in, 0, out, outOff) || disjoint(in, 0, bytes, out.asSlice(outOff), bytes)) flags |= F_SAFE;
        int all = e.arrive(seq, fp, op, flags);
        int need = F_CAPABLE | F_WANT | F_SEND | F_RECV | F_SAFE;
        if ((all & need) != need) return e.fellBack();
        boolean ok = false;
        try {
            e.map(true, in, bytes);
            if (rank == root) {
                recvSeg[root] = out;
                recvOff[root] = outOff;
            } else {
                e.peerBuffer(root, false, bytes);
            }
            long lo = ZeroCopyCollectives.sliceStart(count, n, rank, es);
            long hi = ZeroCopyCollectives.sliceStart(count, n, rank + 1, es);
            ZeroCopyCollectives.reduceScatter(sendSeg, sendOff, n, lo, hi, recvSeg[root], recvOff[root] + lo * es, k, avg,
                    scratch, e.buffers.bigScratch((hi - lo) * es));
            ok = true;
        } finally {
            e.finish(seq, op, ok);
        }
        if (rank == root && out == staged && staged != null) MemorySegment.copy(staged, bytes, recv, 0, bytes);
        return true;
    }
}
