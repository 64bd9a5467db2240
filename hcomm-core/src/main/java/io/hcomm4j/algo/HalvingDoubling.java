package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;

/**
 * Recursive halving-doubling (Rabenseifner): a reduce-scatter by recursive halving, then (for all-reduce) an
 * all-gather by recursive doubling. 2·log2 p messages per rank like recursive doubling, but only
 * 2·(p−1)/p of the vector on the wire like the ring: the algorithm for mid-sized vectors on more than two ranks.
 *
 * <p><b>Halving direction.</b> The reduce-scatter halves the vector and the distance together (distance
 * halving): the first step pairs ranks p/2 apart and swaps halves of the whole vector, the last pairs
 * neighbours. A rank keeps the lower half when its bit for the step is clear, so after log2 p steps rank i
 * holds block i in natural order (distance doubling would leave block bit-reverse(i)), which is what
 * reduce-scatter needs. The all-gather runs the same pairs in reverse (distance doubling), each step
 * exchanging a contiguous range.
 *
 * <p><b>Non-powers of two.</b> With p = 2^⌊log2 n⌋ and r = n − p, the first 2r ranks fold pairwise before
 * the halving: even rank 2i sends its whole vector to odd rank 2i+1, which reduces it into its own and
 * takes part as new rank i; ranks 2r.. take part as new ranks r... The p new ranks then run the algorithm;
 * at the end each odd rank hands its even partner what it needs (all-reduce: the whole result;
 * reduce-scatter: the partner's block). For reduce-scatter new rank i owns the blocks of the ranks it stands
 * for (2i and 2i+1, or i+r), which are contiguous, so every rank still ends with its own block.
 *
 * <p><b>Same bits everywhere.</b> Every final element is reduced by exactly one rank (the new rank whose
 * block holds it) and then only copied; every binary step puts the lower rank's operand first. The
 * sequence of reductions therefore depends only on n, the block boundaries and the rank numbering, never on
 * timing: results are the same on every rank and from run to run. AVG reduces as SUM and is divided once,
 * by the owning rank, before its block is passed on.
 */
public final class HalvingDoubling {
    private HalvingDoubling() {
    }

    /**
     * Rabenseifner all-reduce of {@code count} elements of {@code data} in place: the vector is cut into
     * 2^⌊log2 n⌋ balanced blocks (element granularity, so blocks may be empty when {@code count} is small).
     * For AVG {@code avgDivisor} is the rank count and each block's owner divides once; otherwise it is 1.
     */
    public static void allReduce(CollectiveLinks l, MemorySegment data, long count, ReduceKernel k, int avgDivisor) {
        int n = l.size();
        if (n == 1) {
            if (avgDivisor > 1) k.finish(data, 0, count, avgDivisor);
            return;
        }
        int rank = l.rank();
        int pof2 = Integer.highestOneBit(n);
        int rem = n - pof2;
        long es = k.type().byteSize();
        // all-reduce may place blocks freely: balance over the p ranks that work rather than over all n
        long[] bound = Reductions.split(count, pof2);
        int newRank = foldAndHalve(l, data, bound, k, avgDivisor);
        if (newRank >= 0) {
            for (int mask = 1; mask < pof2; mask <<= 1) {
                int newPartner = newRank ^ mask;
                int mine = newRank & -mask;
                int theirs = newPartner & -mask;
                long theirBytes = (bound[theirs + mask] - bound[theirs]) * es;
                CommFuture<Status> r = l.recv(realRank(newPartner, rem), data.asSlice(bound[theirs] * es, theirBytes));
                CommFuture<Void> w = l.send(realRank(newPartner, rem),
                        data.asSlice(bound[mine] * es, (bound[mine + mask] - bound[mine]) * es));
                l.await(r, theirBytes);
                w.await();
            }
        }
        if (rank < 2 * rem) {
            long bytes = count * es;
            if (rank % 2 != 0) l.send(rank - 1, data.asSlice(0, bytes)).await();
            else l.await(l.recv(rank + 1, data.asSlice(0, bytes)), bytes);
        }
    }

    /**
     * Reduce-scatter by recursive halving over blocks {@code at[b]..at[b+1]} (elements) of {@code data}: at the
     * end this rank's block {@code rank} holds the full reduction (divided for AVG when {@code avgDivisor > 1});
     * the rest of {@code data} is left with partial results. Blocks may have any sizes, including zero.
     */
    public static void reduceScatter(CollectiveLinks l, MemorySegment data, long[] at, ReduceKernel k, int avgDivisor) {
        int n = l.size();
        int rank = l.rank();
        long es = k.type().byteSize();
        if (n == 1) {
            if (avgDivisor > 1) k.finish(data, at[0] * es, at[1] - at[0], avgDivisor);
            return;
        }
        int pof2 = Integer.highestOneBit(n);
        int rem = n - pof2;
        // new rank i stands for ranks 2i and 2i+1 (i < rem) or i+rem: its range is their blocks, back to back
        long[] bound = new long[pof2 + 1];
        for (int i = 0; i <= pof2; i++) bound[i] = at[i < rem ? 2 * i : i + rem];
        foldAndHalve(l, data, bound, k, avgDivisor);
        if (rank < 2 * rem) {
            int even = rank & ~1;
            long bytes = (at[even + 1] - at[even]) * es;
            MemorySegment block = data.asSlice(at[even] * es, bytes);
            if (rank % 2 != 0) l.send(even, block).await();
            else l.await(l.recv(rank + 1, block), bytes);
        }
    }

    /** Rank of new rank {@code newRank} (see the class comment). */
    private static int realRank(int newRank, int rem) {
        return newRank < rem ? 2 * newRank + 1 : newRank + rem;
    }

    /**
     * The shared first half: the non-power-of-two fold, then recursive halving over {@code bound} (new rank
     * i's block is {@code bound[i]..bound[i+1]}), then AVG's division of the own block. Returns this rank's
     * new rank, or −1 for an even rank that folded into its neighbour and now only waits for its result.
     */
    private static int foldAndHalve(CollectiveLinks l, MemorySegment data, long[] bound, ReduceKernel k, int avgDivisor) {
        int n = l.size();
        int rank = l.rank();
        int pof2 = bound.length - 1;
        int rem = n - pof2;
        long es = k.type().byteSize();
        long all = bound[pof2] - bound[0];
        int newRank = rank < 2 * rem ? (rank % 2 == 0 ? -1 : rank / 2) : rank - rem;
        if (newRank < 0) {
            l.send(rank + 1, data.asSlice(bound[0] * es, all * es)).await();
            return -1;
        }
        // the largest receive: the folded neighbour's whole vector, else the half kept at the first step
        int half = pof2 / 2;
        long firstKept = newRank < half ? bound[half] - bound[0] : bound[pof2] - bound[half];
        MemorySegment tmp = l.scratch((rank < 2 * rem ? all : firstKept) * es);
        if (rank < 2 * rem) {
            l.await(l.recv(rank - 1, tmp.asSlice(0, all * es)), all * es);
            if (all > 0) k.combine(tmp, 0, data, bound[0] * es, data, bound[0] * es, all); // lower rank's operand first
        }
        for (int mask = half; mask > 0; mask >>= 1) {
            int newPartner = newRank ^ mask;
            int partner = realRank(newPartner, rem);
            int group = newRank & -(mask << 1);
            long lo = bound[group];
            long mid = bound[group + mask];
            long hi = bound[group + 2 * mask];
            boolean upper = (newRank & mask) != 0;
            long keep = upper ? mid : lo;
            long keepLen = upper ? hi - mid : mid - lo;
            long give = upper ? lo : mid;
            long giveLen = upper ? mid - lo : hi - mid;
            CommFuture<Status> r = l.recv(partner, tmp.asSlice(0, keepLen * es));
            CommFuture<Void> w = l.send(partner, data.asSlice(give * es, giveLen * es));
            l.await(r, keepLen * es);
            w.await();
            if (keepLen > 0) {
                if (partner < rank) k.combine(tmp, 0, data, keep * es, data, keep * es, keepLen);
                else k.combine(data, keep * es, tmp, 0, data, keep * es, keepLen);
            }
        }
        if (avgDivisor > 1) k.finish(data, bound[newRank] * es, bound[newRank + 1] - bound[newRank], avgDivisor);
        return newRank;
    }
}
