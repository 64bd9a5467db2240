package io.hcomm4j.comm;

import io.hcomm4j.algo.ZeroCopyCollectives;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;

/**
 * A large all-reduce in shared memory when some rank's buffers are not registered (a plain {@code Arena}, a heap
 * array): that rank's data goes through a small registered ring of two chunks, chunk by chunk, instead of being
 * copied whole into a staging buffer before the reduction and whole out of it after.
 *
 * <p><b>Why.</b> Staged whole, the staging buffer is written to memory and read back twice (by the reduction, by the
 * copy out), and a large op ran at about half the registered speed. Chunk by chunk, the ring stays in the last-level
 * cache: the copy in leaves the chunk there for the peers' reductions, their results stay there for the copy out, and
 * memory sees only the caller's buffers (docs/performance.md has the figures).
 *
 * <p><b>Steps.</b> Chunk {@code s} of the op goes through ring slot {@code s % 2} of every staged rank (a registered
 * rank's chunk is read and written where it lies). Step {@code 2s+1}: every staged rank has copied its chunk in.
 * Step {@code 2s+2}: every rank has reduced its slice of the chunk (as {@link ZeroCopyCollectives#allReduce}, in rank
 * order, into every rank's slot). Each rank then copies its chunk out. A slot is free again once its chunk is copied
 * out: its next use (chunk {@code s+2}) is read by peers only after its step {@code 2s+5}, which this rank publishes
 * after the copy out, and written by them only after that. So a rank copies chunk {@code s+1} in while the peers
 * still reduce chunk {@code s}, and waits for them only before it copies chunk {@code s} out.
 *
 * <p>An off-heap rank's own slice of a chunk never enters its ring: only this rank reduces it, so it reads it from its
 * send buffer and writes the result into its receive buffer, and copies in and out just the peers' slices (on 2 ranks
 * half the copying; 4-15 % more busbw at 16-256 MiB, docs/performance.md).
 *
 * <p>Every rank takes the same steps (the chunk size depends on the op only), registered ones included: they copy
 * nothing, but their buffers are read and written chunk by chunk like the others'.
 */
final class ZeroCopyPipeline {
    /** Bytes of one chunk: its two slots on every rank stay in the last-level cache. */
    static final long CHUNK = 1 << 20;
    /** Bytes of a rank's ring: two chunks. */
    static final long RING = 2 * CHUNK;
    /** Ops of at least this many bytes go through rings; smaller ones are staged whole. */
    static final long MIN_BYTES = 2 * CHUNK;

    private final ZeroCopyEngine e;
    private final int rank;
    private final int n;
    private final MemorySegment scratch;
    /** Every rank's input and output of the current chunk: segment and byte offset of its element 0. */
    private final MemorySegment[] in;
    private final long[] inOff;
    private final MemorySegment[] out;
    private final long[] outOff;
    /** Where each rank's input and output begin (a ring's start, a buffer's element 0). */
    private final long[] inBase;
    private final long[] outBase;
    /** Which ranks published a ring ({@link ControlLayout#F_STAGED}) for the current op. */
    private final boolean[] staged;
    /** Whether this rank reduces its own slice of the current op straight from its send into its receive buffer. */
    private boolean direct;

    ZeroCopyPipeline(ZeroCopyEngine e) {
        this.e = e;
        this.rank = e.rank;
        this.n = e.n;
        this.scratch = e.scratch;
        this.in = new MemorySegment[n];
        this.inOff = new long[n];
        this.out = new MemorySegment[n];
        this.outOff = new long[n];
        this.inBase = new long[n];
        this.outBase = new long[n];
        this.staged = new boolean[n];
    }

    /** True if {@code send} and {@code recv} can be staged chunk by chunk: the same memory or no overlap at all. */
    static boolean fits(MemorySegment send, MemorySegment recv, long bytes) {
        if (bytes < MIN_BYTES) return false;
        if (send.isNative() || recv.isNative()) return ZeroCopyOps.sameOrDisjoint(send, recv, bytes);
        Object a = send.heapBase().orElse(null);
        return a != recv.heapBase().orElse(null) || send.address() == recv.address()
                || send.address() + bytes <= recv.address() || recv.address() + bytes <= send.address();
    }

    /** Whether any rank of the op just arrived at published a ring. */
    boolean anyStaged() {
        for (int q = 0; q < n; q++) if ((e.flagsOf(q) & ControlLayout.F_STAGED) != 0) return true;
        return false;
    }

    /**
     * This rank's part of the all-reduce {@code seq} of {@code count} elements, after every rank arrived with its
     * buffers or its ring ({@code ring}: this rank's, or null if its buffers are registered); ends with
     * {@link ZeroCopyEngine#finish}.
     */
    void allReduce(long seq, String op, MemorySegment send, MemorySegment recv, MemorySegment ring, long count,
                   ReduceKernel k, int avg) {
        int es = k.type().byteSize();
        long bytes = count * es;
        boolean ok = false;
        try {
            e.pipelinedOps++;
            boolean mine = ring != null;
            // segments once per op; per chunk only the offsets move (the slot of a ring, the chunk of a buffer)
            for (int q = 0; q < n; q++) {
                staged[q] = (e.flagsOf(q) & ControlLayout.F_STAGED) != 0;
                if (q == rank) {
                    // off-heap, this rank's own slice is read from and written to its own buffers: only the slices
                    // the peers reduce go through its ring (heap arrays go whole: the kernels would meet heap segments)
                    direct = !mine || (send.isNative() && recv.isNative());
                    staged[q] = !direct; // its own slice then lies where a registered rank's does
                    in[q] = direct ? send : ring;
                    out[q] = direct ? recv : ring;
                    inBase[q] = 0;
                    outBase[q] = 0;
                    continue;
                }
                e.peerBuffer(q, true, staged[q] ? RING : bytes);
                e.peerBuffer(q, false, staged[q] ? RING : bytes);
                in[q] = e.sendSeg[q];
                inBase[q] = e.sendOff[q];
                out[q] = e.recvSeg[q];
                outBase[q] = e.recvOff[q];
            }
            long per = CHUNK / es;
            int steps = (int) ((count + per - 1) / per);
            if (mine) copyOthers(send, 0, ring, 0, Math.min(per, count), es);
            e.step(seq, 1);
            // one call per chunk: a loop of long iterations in one method gets compiled on stack (OSR) from the profile
            // of its first ops, and such code was seen to keep large ops 4x slow after smaller ones
            for (int s = 0; s < steps; s++) chunk(seq, op, s, steps, send, recv, ring, count, k, avg);
            ok = true;
        } finally {
            e.finish(seq, op, ok);
        }
    }

    /**
     * Chunk {@code s} of {@code steps}: waits until every rank copied it in, reduces this rank's slice of it, copies
     * the next chunk in, waits until every rank reduced this one and copies it out.
     */
    private void chunk(long seq, String op, int s, int steps, MemorySegment send, MemorySegment recv, MemorySegment ring,
                       long count, ReduceKernel k, int avg) {
        int es = k.type().byteSize();
        long per = CHUNK / es;
        long at = s * per * es;
        long len = Math.min(per, count - s * per) * es;
        long slot = (s & 1) * CHUNK;
        for (int q = 0; q < n; q++) {
            long where = staged[q] ? slot : at;
            inOff[q] = inBase[q] + where;
            outOff[q] = outBase[q] + where;
        }
        e.awaitStep(seq, 2 * s + 1, op);
        ZeroCopyCollectives.allReduce(in, inOff, out, outOff, rank, n, len / es, k, avg, scratch);
        e.step(seq, 2 * s + 2);
        // the next chunk in while the peers reduce this one: its slot's last chunk (s - 1) is copied out
        if (s + 1 < steps) {
            if (ring != null) copyOthers(send, at + CHUNK, ring, CHUNK - slot, Math.min(per, count - (s + 1) * per), es);
            e.step(seq, 2 * s + 3);
        }
        e.awaitStep(seq, 2 * s + 2, op);
        if (ring != null) copyOthers(ring, slot, recv, at, len / es, es);
    }

    /**
     * Copies the {@code elems} elements of a chunk from {@code src} at {@code srcAt} to {@code dst} at {@code dstAt};
     * when {@link #direct}, all but this rank's slice of them (which it reduces straight from its send buffer into its
     * receive buffer).
     */
    private void copyOthers(MemorySegment src, long srcAt, MemorySegment dst, long dstAt, long elems, int es) {
        if (!direct) {
            MemorySegment.copy(src, srcAt, dst, dstAt, elems * es);
            return;
        }
        long lo = ZeroCopyCollectives.sliceStart(elems, n, rank, es) * es;
        long hi = ZeroCopyCollectives.sliceStart(elems, n, rank + 1, es) * es;
        if (lo > 0) MemorySegment.copy(src, srcAt, dst, dstAt, lo);
        long bytes = elems * es;
        if (hi < bytes) MemorySegment.copy(src, srcAt + hi, dst, dstAt + hi, bytes - hi);
    }
}
