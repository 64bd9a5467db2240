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

    /** Ring chunk, in elements, for blocks of {@code blockBytes} ({@link Tuner#ringChunkBytes}). */
    public static long ringChunkElems(long blockBytes, int elemBytes) {
        return Math.max(1, Tuner.ringChunkBytes(blockBytes) / elemBytes);
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
     * Ring reduce-scatter over blocks {@code at[b]..at[b+1]} (elements): n−1 steps; at the end block {@code rank}
     * of {@code data} holds the full reduction of every rank's {@code send} (divided for AVG when
     * {@code avgDivisor > 1}); the other blocks of {@code data} hold partial sums. {@code send} may be
     * {@code data} itself (in place) and is only read.
     */
    public static void ringReduceScatter(CollectiveLinks l, MemorySegment send, MemorySegment data, long[] at,
                                         ReduceKernel k, long chunkElems, int avgDivisor) {
        ring(l, send, data, at, k, chunkElems, avgDivisor, false);
    }

    /**
     * Ring all-reduce: a ring reduce-scatter followed by a ring all-gather of the reduced blocks, bandwidth-optimal,
     * pipelined per chunk across all 2(n−1) steps (see {@link #ring}). {@code send} may be {@code data} itself.
     */
    public static void ringAllReduce(CollectiveLinks l, MemorySegment send, MemorySegment data, long count,
                                     ReduceKernel k, long chunkElems, int avgDivisor) {
        ring(l, send, data, split(count, l.size()), k, chunkElems, avgDivisor, true);
    }

    /**
     * The ring, pipelined per chunk. Block b travels the ring as chunks of {@code chunkElems} (aligned to the
     * block start, so both ends cut a block alike; an empty block is one empty message). At step s a rank sends
     * block {@code rank−s−1} to its right and receives block {@code rank−s−2} from its left — for every step,
     * reduce-scatter (s < n−1) and all-gather alike — so the block received at step s is the one sent at step
     * s+1, and each chunk is passed on the moment it has been reduced (or, in the all-gather, received) instead of
     * after the whole step: reducing chunk c, receiving chunk c+1 and sending chunk c−1 overlap, and so do the
     * last reduce-scatter step and the first all-gather step. Messages on the link from the left arrive in the
     * order they are received here (step by step, chunk by chunk), so one tag serves them all.
     *
     * <p>Out of place ({@code send != data}) a reduce-scatter chunk is received straight into {@code data} and
     * combined there with {@code send} (no copy of the input); in place it goes through {@link #RING_DEPTH}
     * scratch buffers. Each element of block b is reduced by the ranks b+1, b+2, …, b in that order, whatever
     * the timing, so results are deterministic and (after the all-gather) the same bits on every rank.
     */
    private static void ring(CollectiveLinks l, MemorySegment send, MemorySegment data, long[] at, ReduceKernel k,
                             long chunkElems, int avgDivisor, boolean allGather) {
        int n = l.size();
        int rank = l.rank();
        long es = k.type().byteSize();
        boolean inPlace = sameStart(send, data);
        if (n == 1) {
            long bytes = (at[1] - at[0]) * es;
            if (!inPlace) MemorySegment.copy(send, at[0] * es, data, at[0] * es, bytes);
            if (avgDivisor > 1) k.finish(data, at[0] * es, at[1] - at[0], avgDivisor);
            return;
        }
        int right = (rank + 1) % n;
        int left = (rank - 1 + n) % n;
        long maxBlock = 0;
        for (int b = 0; b < n; b++) maxBlock = Math.max(maxBlock, at[b + 1] - at[b]);
        long chunk = Math.max(1, Math.min(chunkElems, maxBlock));
        int steps = allGather ? 2 * (n - 1) : n - 1;
        MemorySegment[] buf = null;
        if (inPlace) {
            buf = new MemorySegment[RING_DEPTH];
            for (int i = 0; i < RING_DEPTH; i++) buf[i] = l.scratch(chunk * es);
        }
        @SuppressWarnings("unchecked")
        CommFuture<Status>[] inFlight = new CommFuture[RING_DEPTH];
        List<CommFuture<Void>> sends = new ArrayList<>();
        // step 0 sends block rank-1 straight from the input
        int first = Math.floorMod(rank - 1, n);
        for (long e = at[first], end = at[first + 1]; ; ) {
            long len = Math.min(chunk, end - e);
            sends.add(l.send(right, send.asSlice(e * es, len * es)));
            e += len;
            if (e >= end) break;
        }
        // receive cursor (step, chunk) of the next receive to post; messages arrive in this order
        int postStep = 0;
        long postChunk = 0;
        int posted = 0;
        int processed = 0;
        for (int s = 0; s < steps; s++) {
            int b = Math.floorMod(rank - s - 2, n);
            long base = at[b];
            long blockLen = at[b + 1] - base;
            long chunks = Math.max(1, (blockLen + chunk - 1) / chunk);
            boolean reduce = s < n - 1;
            for (long c = 0; c < chunks; c++) {
                // keep RING_DEPTH receives posted ahead, across step boundaries
                while (posted - processed < RING_DEPTH && postStep < steps) {
                    int pb = Math.floorMod(rank - postStep - 2, n);
                    long pBase = at[pb];
                    long pLen = at[pb + 1] - pBase;
                    long pChunks = Math.max(1, (pLen + chunk - 1) / chunk);
                    long pe = pBase + postChunk * chunk;
                    long plen = Math.min(chunk, at[pb + 1] - pe);
                    MemorySegment into = postStep < n - 1 && inPlace
                            ? buf[posted % RING_DEPTH].asSlice(0, plen * es)
                            : data.asSlice(pe * es, plen * es);
                    inFlight[posted % RING_DEPTH] = l.recv(left, into);
                    posted++;
                    if (++postChunk == pChunks) {
                        postChunk = 0;
                        postStep++;
                    }
                }
                long e = base + c * chunk;
                long len = Math.min(chunk, at[b + 1] - e);
                int slot = processed % RING_DEPTH;
                l.await(inFlight[slot], len * es);
                inFlight[slot] = null;
                processed++;
                if (reduce && len > 0) {
                    // own contribution first: the same operand order as accumulating into a copy of the input
                    if (inPlace) k.combine(send, e * es, buf[slot], 0, data, e * es, len);
                    else k.combine(send, e * es, data, e * es, data, e * es, len);
                    if (s == n - 2 && avgDivisor > 1) k.finish(data, e * es, len, avgDivisor);
                }
                if (s + 1 < steps) sends.add(l.send(right, data.asSlice(e * es, len * es)));
            }
        }
        for (CommFuture<Void> w : sends) w.await();
    }

    /** Whether two segments start at the same memory (the same array or native address). */
    static boolean sameStart(MemorySegment a, MemorySegment b) {
        if (a.isNative() != b.isNative() || a.address() != b.address()) return false;
        return a.isNative() || a.heapBase().orElseThrow() == b.heapBase().orElseThrow();
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
