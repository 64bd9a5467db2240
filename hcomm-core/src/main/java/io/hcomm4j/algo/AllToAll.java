package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import java.lang.foreign.MemorySegment;

/** All-to-all: block b of every rank's send buffer goes to rank b; pairwise exchange, or Bruck for small equal blocks. */
public final class AllToAll {
    private AllToAll() {
    }

    /**
     * Pairwise exchange: n−1 steps; at step s a rank sends to rank+s and receives from rank−s, so every
     * step is a perfect matching and no rank is hot. Variable blocks: {@code sendOffsets/sendSizes[b]} in
     * {@code send} go to rank b, {@code recvOffsets/recvSizes[b]} in {@code recv} come from rank b.
     * {@code send} and {@code recv} must not overlap.
     */
    public static void pairwise(CollectiveLinks l, MemorySegment send, long[] sendOffsets, long[] sendSizes,
                                MemorySegment recv, long[] recvOffsets, long[] recvSizes) {
        int n = l.size();
        int rank = l.rank();
        MemorySegment.copy(send, sendOffsets[rank], recv, recvOffsets[rank], sendSizes[rank]);
        for (int s = 1; s < n; s++) {
            int dst = (rank + s) % n;
            int src = (rank - s + n) % n;
            CommFuture<Status> r = l.recv(src, recv.asSlice(recvOffsets[src], recvSizes[src]));
            CommFuture<Void> w = l.send(dst, send.asSlice(sendOffsets[dst], sendSizes[dst]));
            l.await(r, recvSizes[src]);
            w.await();
        }
    }

    /**
     * Bruck all-to-all of equal blocks for small messages: ⌈log2 n⌉ rounds instead of n−1, at the price of
     * moving about half of the data each round. Rotate locally so that position i holds the block for rank+i;
     * in round k (k = 1, 2, 4, …) send the blocks whose position has bit k set, packed into one message, to
     * rank+k and put the ones received from rank−k at the same positions; after the last round position i
     * holds the block from rank−i, which the inverse rotation puts in place. Works for any n. {@code send}
     * is read completely before {@code recv} is written, so the two may overlap (in place).
     */
    public static void bruck(CollectiveLinks l, MemorySegment send, MemorySegment recv, long blockBytes) {
        int n = l.size();
        int rank = l.rank();
        if (n == 1) {
            MemorySegment.copy(send, 0, recv, 0, blockBytes);
            return;
        }
        int most = 0;
        for (int k = 1; k < n; k <<= 1) most = Math.max(most, positions(n, k));
        MemorySegment buf = l.scratch((n + 2L * most) * blockBytes);
        MemorySegment tmp = buf.asSlice(0, n * blockBytes);
        MemorySegment out = buf.asSlice(n * blockBytes, most * blockBytes);
        MemorySegment in = buf.asSlice((n + (long) most) * blockBytes, most * blockBytes);
        // tmp[i] = send[(rank + i) % n]: two contiguous runs
        MemorySegment.copy(send, rank * blockBytes, tmp, 0, (n - rank) * blockBytes);
        MemorySegment.copy(send, 0, tmp, (n - rank) * blockBytes, rank * blockBytes);
        for (int k = 1; k < n; k <<= 1) {
            long bytes = positions(n, k) * blockBytes;
            // the positions with bit k set are runs of k blocks; from k >= n/2 on there is just one, sent as it lies
            boolean oneRun = 2 * k >= n;
            MemorySegment message = oneRun ? tmp.asSlice(k * blockBytes, bytes) : out.asSlice(0, bytes);
            if (!oneRun) forRuns(n, k, blockBytes, tmp, message, true);
            CommFuture<Status> r = l.recv((rank - k + n) % n, in.asSlice(0, bytes));
            CommFuture<Void> w = l.send((rank + k) % n, message);
            l.await(r, bytes);
            w.await();
            forRuns(n, k, blockBytes, tmp, in, false);
        }
        for (int i = 0; i < n; i++) {
            MemorySegment.copy(tmp, i * blockBytes, recv, ((rank - i + n) % n) * blockBytes, blockBytes);
        }
    }

    /** How many of the positions 0..n−1 have bit {@code k} (a power of two) set. */
    static int positions(int n, int k) {
        return n / (2 * k) * k + Math.max(0, n % (2 * k) - k);
    }

    /** Packs ({@code pack}) or unpacks the blocks at positions with bit {@code k} set between {@code tmp} and {@code packed}. */
    private static void forRuns(int n, int k, long blockBytes, MemorySegment tmp, MemorySegment packed, boolean pack) {
        long at = 0;
        for (int start = k; start < n; start += 2 * k) {
            long bytes = Math.min(k, n - start) * blockBytes;
            if (pack) MemorySegment.copy(tmp, start * blockBytes, packed, at, bytes);
            else MemorySegment.copy(packed, at, tmp, start * blockBytes, bytes);
            at += bytes;
        }
    }

    /** Dissemination barrier: ⌈log2 n⌉ rounds of empty messages to rank+2^k from rank−2^k. */
    public static void barrier(CollectiveLinks l) {
        int n = l.size();
        int rank = l.rank();
        MemorySegment empty = MemorySegment.NULL;
        for (int k = 1; k < n; k <<= 1) {
            CommFuture<Status> r = l.recv((rank - k + n) % n, empty);
            CommFuture<Void> w = l.send((rank + k) % n, empty);
            l.await(r, 0);
            w.await();
        }
    }
}
