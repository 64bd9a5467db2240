package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Reduction algorithms: all-reduce (ring, recursive doubling), reduce-scatter (ring), reduce (binomial
 * tree). Each final element is computed by a fixed sequence of binary reductions that does not depend on
 * timing, so results are the same from run to run; where several ranks compute the same element (recursive
 * doubling) both partners combine the lower rank's operand first, so every rank holds the same bits.
 * AVG reduces as SUM and divides once, on the rank that finishes the element.
 */
public final class Reductions {
    /** Receives a ring step keeps in flight. */
    static final int RING_DEPTH = 3;

    private Reductions() {
    }

    /** Element offsets of {@code parts} balanced blocks of {@code count} elements: block b is [at[b], at[b+1]). */
    public static long[] split(long count, int parts) {
        long[] at = new long[parts + 1];
        long base = count / parts;
        long extra = count % parts;
        for (int b = 0; b < parts; b++) at[b + 1] = at[b] + base + (b < extra ? 1 : 0);
        return at;
    }

    /**
     * Ring reduce-scatter over blocks {@code at[b]..at[b+1]} (elements) of {@code data}: n−1 steps; at the end
     * this rank's block {@code rank} holds the full reduction (divided for AVG when {@code avgDivisor > 1}).
     * Each step receives in chunks of {@code chunkElems} into two scratch buffers, so reducing one chunk
     * overlaps receiving the next.
     */
    public static void ringReduceScatter(CollectiveLinks l, MemorySegment data, long[] at, ReduceKernel k,
                                         long chunkElems, int avgDivisor) {
        int n = l.size();
        int rank = l.rank();
        long es = k.type().byteSize();
        if (n > 1) {
            int right = (rank + 1) % n;
            int left = (rank - 1 + n) % n;
            long maxBlock = 0;
            for (int b = 0; b < n; b++) maxBlock = Math.max(maxBlock, at[b + 1] - at[b]);
            long chunk = Math.max(1, Math.min(chunkElems, maxBlock));
            // several receives in flight, so the rendezvous round trip of chunk c+1 hides behind chunk c
            MemorySegment[] buf = new MemorySegment[RING_DEPTH];
            for (int i = 0; i < RING_DEPTH; i++) buf[i] = l.scratch(chunk * es);
            @SuppressWarnings("unchecked")
            CommFuture<Status>[] inFlight = new CommFuture[RING_DEPTH];
            List<CommFuture<Void>> sends = new ArrayList<>();
            for (int s = 0; s < n - 1; s++) {
                int sendBlock = (rank - s - 1 + 2 * n) % n;
                int recvBlock = (rank - s - 2 + 2 * n) % n;
                sends.clear();
                // chunks aligned to the block start, so the receiver expects the same sizes; an empty block is one empty message
                long e0 = at[sendBlock];
                long sendEnd = at[sendBlock + 1];
                do {
                    long len = Math.min(chunk, sendEnd - e0);
                    sends.add(l.send(right, data.asSlice(e0 * es, len * es)));
                    e0 += len;
                } while (e0 < sendEnd);
                long first = at[recvBlock];
                long end = at[recvBlock + 1];
                int chunks = (int) Math.max(1, (end - first + chunk - 1) / chunk);
                for (int c = 0; c < Math.min(RING_DEPTH, chunks); c++) {
                    inFlight[c] = l.recv(left, buf[c].asSlice(0, Math.min(chunk, end - first - c * chunk) * es));
                }
                for (int c = 0; c < chunks; c++) {
                    int slot = c % RING_DEPTH;
                    long e = first + c * chunk;
                    long len = Math.min(chunk, end - e);
                    l.await(inFlight[slot], len * es);
                    if (len > 0) k.accumulate(data, e * es, buf[slot], 0, len);
                    int next = c + RING_DEPTH;
                    if (next < chunks) {
                        inFlight[slot] = l.recv(left, buf[slot].asSlice(0, Math.min(chunk, end - first - (long) next * chunk) * es));
                    }
                }
                for (CommFuture<Void> w : sends) w.await();
            }
        }
        if (avgDivisor > 1) k.finish(data, at[rank] * es, at[rank + 1] - at[rank], avgDivisor);
    }

    /** Ring all-reduce: ring reduce-scatter, then ring all-gather of the reduced blocks. Bandwidth-optimal. */
    public static void ringAllReduce(CollectiveLinks l, MemorySegment data, long count, ReduceKernel k, long chunkElems,
                                     int avgDivisor) {
        int n = l.size();
        long[] at = split(count, n);
        ringReduceScatter(l, data, at, k, chunkElems, avgDivisor);
        if (n == 1) return;
        long es = k.type().byteSize();
        long[] off = new long[n];
        long[] len = new long[n];
        for (int b = 0; b < n; b++) {
            off[b] = at[b] * es;
            len[b] = (at[b + 1] - at[b]) * es;
        }
        AllGather.ring(l, data, off, len);
    }

    /**
     * Recursive doubling all-reduce: ⌈log2 n⌉ exchanges of the whole vector (plus one step before and after
     * for the ranks beyond the largest power of two). Latency-optimal: for small messages.
     */
    public static void recursiveDoubling(CollectiveLinks l, MemorySegment data, long count, ReduceKernel k, int avgDivisor) {
        int n = l.size();
        int rank = l.rank();
        long bytes = count * k.type().byteSize();
        if (n > 1) {
            MemorySegment tmp = l.scratch(bytes);
            int pof2 = Integer.highestOneBit(n);
            int rem = n - pof2;
            // ranks < 2*rem pair up: the even one hands its vector to the odd one and sits out
            int newRank;
            if (rank < 2 * rem) {
                if (rank % 2 == 0) {
                    l.send(rank + 1, data).await();
                    newRank = -1;
                } else {
                    l.await(l.recv(rank - 1, tmp), bytes);
                    k.combine(tmp, 0, data, 0, data, 0, count); // lower rank's operand first
                    newRank = rank / 2;
                }
            } else {
                newRank = rank - rem;
            }
            if (newRank >= 0) {
                for (int mask = 1; mask < pof2; mask <<= 1) {
                    int newPartner = newRank ^ mask;
                    int partner = newPartner < rem ? newPartner * 2 + 1 : newPartner + rem;
                    CommFuture<Status> r = l.recv(partner, tmp);
                    CommFuture<Void> w = l.send(partner, data);
                    l.await(r, bytes);
                    w.await();
                    if (partner < rank) k.combine(tmp, 0, data, 0, data, 0, count);
                    else k.combine(data, 0, tmp, 0, data, 0, count);
                }
            }
            if (rank < 2 * rem) {
                if (rank % 2 != 0) l.send(rank - 1, data).await();
                else l.await(l.recv(rank + 1, data), bytes);
            }
        }
        if (avgDivisor > 1) k.finish(data, 0, count, avgDivisor);
    }

    /**
     * Binomial-tree reduce to {@code root}: ⌈log2 n⌉ rounds; each rank reduces its children's vectors (in
     * the tree's fixed order) into its own and sends the result to its parent. {@code data} is this rank's
     * contribution and is overwritten with partial results; on the root it ends as the full reduction.
     */
    public static void binomialReduce(CollectiveLinks l, MemorySegment data, long count, ReduceKernel k, int root,
                                      int avgDivisor) {
        int n = l.size();
        int rank = l.rank();
        int vr = (rank - root + n) % n;
        long bytes = count * k.type().byteSize();
        MemorySegment tmp = n > 1 ? l.scratch(bytes) : null;
        for (int mask = 1; mask < n; mask <<= 1) {
            if ((vr & mask) == 0) {
                int child = vr | mask;
                if (child < n) {
                    l.await(l.recv((child + root) % n, tmp), bytes);
                    k.accumulate(data, 0, tmp, 0, count);
                }
            } else {
                l.send((vr - mask + root) % n, data).await();
                return;
            }
        }
        if (avgDivisor > 1) k.finish(data, 0, count, avgDivisor);
    }
}
