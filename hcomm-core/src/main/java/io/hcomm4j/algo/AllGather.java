package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import java.lang.foreign.MemorySegment;

/**
 * All-gather algorithms. Each works in place on {@code recv}: block b (rank b's contribution) lives at
 * {@code offsets[b]} with {@code sizes[b]} bytes, and this rank's own block is already there.
 */
public final class AllGather {
    private AllGather() {
    }

    /** Ring: n−1 steps, each rank passes the block it received last to its right neighbour. Bandwidth-optimal. */
    public static void ring(CollectiveLinks l, MemorySegment recv, long[] offsets, long[] sizes) {
        int n = l.size();
        int rank = l.rank();
        int right = (rank + 1) % n;
        int left = (rank - 1 + n) % n;
        for (int s = 0; s < n - 1; s++) {
            int sendBlock = (rank - s + n) % n;
            int recvBlock = (rank - s - 1 + n) % n;
            CommFuture<Status> r = l.recv(left, recv.asSlice(offsets[recvBlock], sizes[recvBlock]));
            CommFuture<Void> w = l.send(right, recv.asSlice(offsets[sendBlock], sizes[sendBlock]));
            l.await(r, sizes[recvBlock]);
            w.await();
        }
    }

    /**
     * Bruck: ⌈log2 n⌉ steps for any n; at step k a rank sends the min(k, n−k) blocks it holds to rank−k and
     * receives as many from rank+k, then rotates. Equal block sizes only; best for small blocks.
     */
    public static void bruck(CollectiveLinks l, MemorySegment recv, long blockBytes) {
        int n = l.size();
        if (n == 1) return;
        int rank = l.rank();
        MemorySegment tmp = l.scratch(n * blockBytes);
        MemorySegment.copy(recv, rank * blockBytes, tmp, 0, blockBytes);
        for (int k = 1; k < n; k <<= 1) {
            long bytes = Math.min(k, n - k) * blockBytes;
            CommFuture<Status> r = l.recv((rank + k) % n, tmp.asSlice(k * blockBytes, bytes));
            CommFuture<Void> w = l.send((rank - k + n) % n, tmp.asSlice(0, bytes));
            l.await(r, bytes);
            w.await();
        }
        for (int i = 0; i < n; i++) {
            int owner = (rank + i) % n;
            if (owner != rank) MemorySegment.copy(tmp, i * blockBytes, recv, owner * blockBytes, blockBytes);
        }
    }
}
