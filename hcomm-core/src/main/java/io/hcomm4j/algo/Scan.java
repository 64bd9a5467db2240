package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;

/**
 * Prefix reductions (MPI_Scan, MPI_Exscan) as a pipelined chain 0 → 1 → … → n−1: rank r receives the inclusive
 * prefix of ranks 0..r−1 from rank r−1, combines it with its own input (prefix OP mine: the same left fold in rank
 * order on every run, whatever the timing, so a result is bit-identical from run to run) and passes its own inclusive
 * prefix on. The buffer goes in chunks, so rank r+1 combines chunk c while rank r combines chunk c+1: the time is about
 * (chunks + n − 2) chunk times. A scan's result depends on the rank, so there is no shared-memory form to share.
 */
public final class Scan {
    /** Chunk of the pipeline. */
    public static final long CHUNK_BYTES = 1 << 20;

    private Scan() {
    }

    /**
     * Inclusive scan: {@code recv} of rank r = send(0) OP … OP send(r). {@code send} may be {@code recv} (in place).
     */
    public static void inclusive(CollectiveLinks l, MemorySegment send, MemorySegment recv, long count, ReduceKernel k,
                                 long chunkBytes) {
        int n = l.size();
        int rank = l.rank();
        long es = k.type().byteSize();
        long bytes = count * es;
        if (!send.equals(recv) && rank == 0) MemorySegment.copy(send, 0, recv, 0, bytes);
        if (n == 1 || bytes == 0) return;
        long chunkElems = Math.max(1, chunkBytes / es);
        int chunks = (int) ((count + chunkElems - 1) / chunkElems);
        MemorySegment[] prefix = rank == 0 ? null : new MemorySegment[] {l.scratch(chunkElems * es), l.scratch(chunkElems * es)};
        CommFuture<Status> next = rank == 0 ? null : l.recv(rank - 1, prefix[0].asSlice(0, elems(0, count, chunkElems) * es));
        CommFuture<Void> lastSend = null;
        for (int c = 0; c < chunks; c++) {
            long at = c * chunkElems * es;
            long e = elems(c, count, chunkElems);
            if (rank > 0) {
                l.await(next, e * es);
                if (c + 1 < chunks) next = l.recv(rank - 1, prefix[(c + 1) & 1].asSlice(0, elems(c + 1, count, chunkElems) * es));
                k.combine(prefix[c & 1], 0, send, at, recv, at, e);
            }
            if (rank < n - 1) {
                CommFuture<Void> s = l.send(rank + 1, recv.asSlice(at, e * es));
                if (lastSend != null) lastSend.await();
                lastSend = s;
            }
        }
        if (lastSend != null) lastSend.await();
    }

    /**
     * Exclusive scan: {@code recv} of rank r = send(0) OP … OP send(r−1) for r ≥ 1; rank 0's {@code recv} is left as
     * it was (MPI leaves it undefined). {@code send} may be {@code recv} (in place).
     */
    public static void exclusive(CollectiveLinks l, MemorySegment send, MemorySegment recv, long count, ReduceKernel k,
                                 long chunkBytes) {
        int n = l.size();
        int rank = l.rank();
        long es = k.type().byteSize();
        if (n == 1 || count == 0) return;
        long chunkElems = Math.max(1, chunkBytes / es);
        int chunks = (int) ((count + chunkElems - 1) / chunkElems);
        boolean middle = rank > 0 && rank < n - 1;
        MemorySegment[] prefix = rank == 0 ? null : new MemorySegment[] {l.scratch(chunkElems * es), l.scratch(chunkElems * es)};
        // what a middle rank passes on (its inclusive prefix), double-buffered: chunk c+2 reuses chunk c's once it is sent
        MemorySegment[] onward = middle ? new MemorySegment[] {l.scratch(chunkElems * es), l.scratch(chunkElems * es)} : null;
        CommFuture<Status> next = rank == 0 ? null : l.recv(rank - 1, prefix[0].asSlice(0, elems(0, count, chunkElems) * es));
        CommFuture<Void> lastSend = null;
        for (int c = 0; c < chunks; c++) {
            long at = c * chunkElems * es;
            long e = elems(c, count, chunkElems);
            MemorySegment out;
            if (rank == 0) {
                out = send.asSlice(at, e * es); // its inclusive prefix is its input
            } else {
                l.await(next, e * es);
                if (c + 1 < chunks) next = l.recv(rank - 1, prefix[(c + 1) & 1].asSlice(0, elems(c + 1, count, chunkElems) * es));
                MemorySegment p = prefix[c & 1];
                if (middle) {
                    out = onward[c & 1];
                    k.combine(p, 0, send, at, out, 0, e); // before recv is written: send may be recv
                    out = out.asSlice(0, e * es);
                } else {
                    out = null;
                }
                MemorySegment.copy(p, 0, recv, at, e * es);
            }
            if (out != null) {
                CommFuture<Void> s = l.send(rank + 1, out);
                if (lastSend != null) lastSend.await(); // the buffer chunk c+1 will fill was chunk c-1's
                lastSend = s;
            }
        }
        if (lastSend != null) lastSend.await();
    }

    /** Elements of chunk {@code c}. */
    private static long elems(int c, long count, long chunkElems) {
        return Math.min(chunkElems, count - c * chunkElems);
    }
}
