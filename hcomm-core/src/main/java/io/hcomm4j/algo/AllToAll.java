package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import java.lang.foreign.MemorySegment;

/** All-to-all: block b of every rank's send buffer goes to rank b. */
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
