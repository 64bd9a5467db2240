package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/** Gather and scatter: one root and every rank's block. */
public final class Rooted {
    private Rooted() {
    }

    /** Blocks in the subtree of relative rank {@code vr} in a binomial tree of {@code n}: vr and its descendants. */
    static int subtree(int vr, int n) {
        int low = vr == 0 ? Integer.highestOneBit(Math.max(1, n - 1)) << 1 : Integer.lowestOneBit(vr);
        return Math.min(low, n - vr);
    }

    /**
     * Binomial-tree gather of equal blocks: each rank collects its subtree's blocks (ordered by relative rank)
     * and sends them to its parent in one message; ⌈log2 n⌉ rounds. On the root, {@code recv} receives block
     * b at {@code b * blockBytes}; {@code send} is this rank's block.
     */
    public static void gatherBinomial(CollectiveLinks l, MemorySegment send, MemorySegment recv, int root, long blockBytes) {
        int n = l.size();
        int rank = l.rank();
        int vr = (rank - root + n) % n;
        int mine = subtree(vr, n);
        MemorySegment tmp = l.scratch(mine * blockBytes);
        MemorySegment.copy(send, 0, tmp, 0, blockBytes);
        for (int mask = 1; mask < n; mask <<= 1) {
            if ((vr & mask) == 0) {
                int child = vr | mask;
                if (child < n) {
                    long bytes = Math.min(mask, n - child) * blockBytes;
                    l.await(l.recv((child + root) % n, tmp.asSlice(mask * blockBytes, bytes)), bytes);
                }
            } else {
                l.send((vr - mask + root) % n, tmp.asSlice(0, mine * blockBytes)).await();
                return;
            }
        }
        for (int i = 0; i < n; i++) MemorySegment.copy(tmp, i * blockBytes, recv, ((i + root) % n) * blockBytes, blockBytes);
    }

    /** Binomial-tree scatter of equal blocks: the reverse of {@link #gatherBinomial}. */
    public static void scatterBinomial(CollectiveLinks l, MemorySegment send, MemorySegment recv, int root, long blockBytes) {
        int n = l.size();
        int rank = l.rank();
        int vr = (rank - root + n) % n;
        int mine = subtree(vr, n);
        MemorySegment tmp = l.scratch(mine * blockBytes);
        int mask = 1;
        if (vr == 0) {
            for (int i = 0; i < n; i++) MemorySegment.copy(send, ((i + root) % n) * blockBytes, tmp, i * blockBytes, blockBytes);
            while (mask < n) mask <<= 1;
        } else {
            while ((vr & mask) == 0) mask <<= 1;
            l.await(l.recv((vr - mask + root) % n, tmp.asSlice(0, mine * blockBytes)), mine * blockBytes);
        }
        List<CommFuture<Void>> sends = new ArrayList<>();
        for (mask >>= 1; mask > 0; mask >>= 1) {
            int child = vr + mask;
            if (child < n) {
                long bytes = Math.min(mask, n - child) * blockBytes;
                sends.add(l.send((child + root) % n, tmp.asSlice(mask * blockBytes, bytes)));
            }
        }
        MemorySegment.copy(tmp, 0, recv, 0, blockBytes);
        for (CommFuture<Void> s : sends) s.await();
    }

    /** Linear gather of variable blocks: the root receives block b from rank b at {@code offsets[b]}. */
    public static void gatherLinear(CollectiveLinks l, MemorySegment send, MemorySegment recv, int root,
                                    long[] offsets, long[] sizes) {
        int n = l.size();
        int rank = l.rank();
        if (rank != root) {
            l.send(root, send.asSlice(0, sizes[rank])).await();
            return;
        }
        List<CommFuture<Status>> rs = new ArrayList<>(n);
        for (int p = 0; p < n; p++) rs.add(p == root ? null : l.recv(p, recv.asSlice(offsets[p], sizes[p])));
        MemorySegment.copy(send, 0, recv, offsets[root], sizes[root]);
        for (int p = 0; p < n; p++) if (p != root) l.await(rs.get(p), sizes[p]);
    }

    /** Linear scatter of variable blocks: the root sends block b (at {@code offsets[b]}) to rank b. */
    public static void scatterLinear(CollectiveLinks l, MemorySegment send, MemorySegment recv, int root,
                                     long[] offsets, long[] sizes) {
        int n = l.size();
        int rank = l.rank();
        if (rank != root) {
            l.await(l.recv(root, recv.asSlice(0, sizes[rank])), sizes[rank]);
            return;
        }
        List<CommFuture<Void>> ws = new ArrayList<>(n);
        for (int p = 0; p < n; p++) if (p != root) ws.add(l.send(p, send.asSlice(offsets[p], sizes[p])));
        MemorySegment.copy(send, offsets[root], recv, 0, sizes[root]);
        for (CommFuture<Void> w : ws) w.await();
    }
}
