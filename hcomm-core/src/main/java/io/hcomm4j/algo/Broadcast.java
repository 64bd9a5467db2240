package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/** Broadcast algorithms: root's buffer ends up in every rank's buffer. */
public final class Broadcast {
    /** Chunk of the pipelined chain. */
    public static final long CHAIN_CHUNK = 1 << 20;

    private Broadcast() {
    }

    /**
     * Binomial tree: rank (relative to root) r receives from r - lowbit(r), then sends to r + 2^k for each
     * smaller power; ⌈log2 n⌉ rounds of the whole message. Best for small messages (latency bound).
     */
    public static void binomialTree(CollectiveLinks l, MemorySegment buf, int root) {
        int n = l.size();
        if (n == 1) return;
        int rank = l.rank();
        int vr = (rank - root + n) % n;
        int mask = 1;
        while (mask < n) {
            if ((vr & mask) != 0) {
                l.await(l.recv((rank - mask + n) % n, buf), buf.byteSize());
                break;
            }
            mask <<= 1;
        }
        List<CommFuture<Void>> sends = new ArrayList<>();
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (vr + mask < n) sends.add(l.send((rank + mask) % n, buf));
        }
        for (CommFuture<Void> s : sends) s.await();
    }

    /**
     * Pipelined chain root → root+1 → … in chunks: each rank forwards chunk c while it receives chunk c+1,
     * so the time is about (chunks + n − 2) chunk times: the whole message at link bandwidth plus a short
     * fill. Best for large messages.
     */
    public static void pipelinedChain(CollectiveLinks l, MemorySegment buf, int root, long chunkBytes) {
        int n = l.size();
        if (n == 1) return;
        int rank = l.rank();
        int vr = (rank - root + n) % n;
        int prev = (rank - 1 + n) % n;
        int next = (rank + 1) % n;
        boolean last = vr == n - 1;
        long size = buf.byteSize();
        long chunk = Math.max(1, chunkBytes);
        int chunks = (int) Math.max(1, (size + chunk - 1) / chunk);
        List<CommFuture<Void>> sends = new ArrayList<>(last ? 0 : chunks);
        if (vr == 0) {
            for (int c = 0; c < chunks; c++) sends.add(l.send(next, slice(buf, c, chunk)));
        } else {
            CommFuture<Status> pending = l.recv(prev, slice(buf, 0, chunk));
            for (int c = 0; c < chunks; c++) {
                MemorySegment piece = slice(buf, c, chunk);
                l.await(pending, piece.byteSize());
                if (c + 1 < chunks) pending = l.recv(prev, slice(buf, c + 1, chunk));
                if (!last) sends.add(l.send(next, piece));
            }
        }
        for (CommFuture<Void> s : sends) s.await();
    }

    static MemorySegment slice(MemorySegment buf, int c, long chunk) {
        long off = c * chunk;
        return buf.asSlice(off, Math.min(chunk, buf.byteSize() - off));
    }
}
