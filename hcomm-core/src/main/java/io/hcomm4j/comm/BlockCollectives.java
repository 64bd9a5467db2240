package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.DataType;
import io.hcomm4j.comm.CollectiveFrame.Mode;
import java.lang.foreign.MemorySegment;

/**
 * The collectives of per-rank blocks of a {@link CommunicatorImpl}: all-gather(V), gather(V), scatter(V) and all-to-all(V), their
 * arguments checked and made into one {@link CollectiveCall}. Gather and scatter check the root's blocks in full, the
 * others' lengths only; the call's blocks are the root's receive (gather) or send (scatter) blocks. All-to-all checks
 * both sides on every rank.
 */
final class BlockCollectives {
    private final CollectiveFrame frame;
    private final ArgumentChecks check;
    private final int rank;
    private final int size;

    BlockCollectives(CollectiveFrame frame, ArgumentChecks check, int rank, int size) {
        this.frame = frame;
        this.check = check;
        this.rank = rank;
        this.size = size;
    }

    // gather and scatter mirror each other (the root's receive blocks or its send blocks): same shape on purpose
    CommFuture<Void> gather(MemorySegment send, MemorySegment recv, long count, DataType type, int root, Mode mode) {
        CollectiveOp o = CollectiveOp.GATHER;
        check.root(o, root);
        long blk = check.bytes(o, "send", send, count, type);
        if (rank == root) check.buffer(o, "recv", recv, check.product(o, "count x ranks", blk, size));
        return rooted(o, count, type, blk * size, send, recv, root, blk, null, null, mode);
    }

    CommFuture<Void> gatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type,
                             int root, Mode mode) {
        CollectiveOp o = CollectiveOp.GATHER_V;
        long[][] b = rootedBlocks(o, "recv", recv, recvCounts, displs, type, root);
        check.buffer(o, "send", send, b[1][rank]);
        return rooted(o, 0, type, sum(b[1]), send, recv, root, 0, b[0], b[1], mode);
    }

    CommFuture<Void> scatter(MemorySegment send, MemorySegment recv, long count, DataType type, int root, Mode mode) {
        CollectiveOp o = CollectiveOp.SCATTER;
        check.root(o, root);
        long blk = check.bytes(o, "recv", recv, count, type);
        if (rank == root) check.buffer(o, "send", send, check.product(o, "count x ranks", blk, size));
        return rooted(o, count, type, blk * size, send, recv, root, blk, null, null, mode);
    }

    CommFuture<Void> scatterV(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv, DataType type,
                              int root, Mode mode) {
        CollectiveOp o = CollectiveOp.SCATTER_V;
        long[][] b = rootedBlocks(o, "send", send, sendCounts, displs, type, root);
        check.buffer(o, "recv", recv, b[1][rank]);
        return rooted(o, 0, type, sum(b[1]), send, recv, root, 0, b[0], b[1], mode);
    }

    /** The root's blocks of its buffer, checked; the others know only the lengths (their offsets are zeros). */
    private long[][] rootedBlocks(CollectiveOp o, String arg, MemorySegment buf, long[] counts, long[] displs, DataType type,
                                  int root) {
        check.root(o, root);
        return rank == root ? check.blocks(o, arg, buf, counts, displs, type)
                : new long[][] {new long[size], check.sizes(o, arg + "Counts", counts, type)};
    }

    private static long sum(long[] values) {
        long total = 0;
        for (long v : values) total += v;
        return total;
    }

    /** Gather and scatter: the blocks are the root's receive (gather) or send (scatter) blocks. */
    private CommFuture<Void> rooted(CollectiveOp o, long fpCount, DataType type, long bytes, MemorySegment send, MemorySegment recv,
                                    int root, long blk, long[] off, long[] len, Mode mode) {
        CollectiveCall c = frame.call(mode).of(o, fpCount, type, null, root, bytes, send, recv);
        c.root = root;
        c.blockBytes = blk;
        if (o == CollectiveOp.GATHER_V) {
            c.recvOff = off;
            c.recvLen = len;
        } else {
            c.sendOff = off;
            c.sendLen = len;
        }
        return frame.start(c, mode);
    }

    CommFuture<Void> allToAll(MemorySegment send, MemorySegment recv, long count, DataType type, Mode mode) {
        CollectiveOp o = CollectiveOp.ALL_TO_ALL;
        check.present(o, "type", type);
        check.checkCount(o, "count", count);
        long blk = check.product(o, "count", count, type.byteSize());
        long total = check.product(o, "count x ranks", blk, size);
        check.buffer(o, "send", send, total);
        check.buffer(o, "recv", recv, total);
        // the fingerprint hashes the block's bytes, not its count
        return allToAll(o, blk, send, recv, blk, null, null, total, null, null, total, mode);
    }

    CommFuture<Void> allToAllV(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv,
                               long[] recvCounts, long[] recvDispls, DataType type, Mode mode) {
        CollectiveOp o = CollectiveOp.ALL_TO_ALL_V;
        long[][] s = check.blocks(o, "send", send, sendCounts, sendDispls, type);
        long[][] r = check.blocks(o, "recv", recv, recvCounts, recvDispls, type);
        if (s[1][rank] != r[1][rank]) {
            throw check.refused(o, "sendCounts[" + rank + "] and recvCounts[" + rank + "] (this rank's block to itself) differ: "
                    + sendCounts[rank] + " and " + recvCounts[rank]);
        }
        long sendBytes = 0;
        long recvBytes = 0;
        for (int i = 0; i < size; i++) {
            sendBytes = Math.max(sendBytes, s[0][i] + s[1][i]);
            recvBytes = Math.max(recvBytes, r[0][i] + r[1][i]);
        }
        return allToAll(o, 0, send, recv, 0, s[0], s[1], sendBytes, r[0], r[1], recvBytes, mode);
    }

    private CommFuture<Void> allToAll(CollectiveOp o, long fpCount, MemorySegment send, MemorySegment recv, long blk, long[] sOff,
                                      long[] sLen, long sendBytes, long[] rOff, long[] rLen, long recvBytes, Mode mode) {
        CollectiveCall c = frame.call(mode).of(o, fpCount, null, null, -1, sendBytes, send, recv);
        c.blockBytes = blk;
        c.sendOff = sOff;
        c.sendLen = sLen;
        c.sendBytes = sendBytes;
        c.recvOff = rOff;
        c.recvLen = rLen;
        c.recvBytes = recvBytes;
        return frame.start(c, mode);
    }

    CommFuture<Void> allGather(MemorySegment send, MemorySegment recv, long count, DataType type, Mode mode) {
        CollectiveOp o = CollectiveOp.ALL_GATHER;
        long blk = check.bytes(o, "send", send, count, type);
        check.buffer(o, "recv", recv, check.product(o, "count x ranks", blk, size));
        return allGather(o, count, type, blk * size, send, recv, blk, null, null, rank * blk, mode);
    }

    CommFuture<Void> allGatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type,
                                        Mode mode) {
        CollectiveOp o = CollectiveOp.ALL_GATHER_V;
        long[][] b = check.blocks(o, "recv", recv, recvCounts, displs, type);
        long[] off = b[0];
        long[] len = b[1];
        check.buffer(o, "send", send.equals(recv) ? recv.asSlice(off[rank], len[rank]) : send, len[rank]);
        long bytes = 0;
        for (long x : len) bytes += x;
        return allGather(o, java.util.Arrays.hashCode(recvCounts), type, bytes, send, recv, 0, off, len, off[rank], mode);
    }

    /** In place (send is recv): this rank's block of recv, at {@code ownOffset}, is what it contributes. */
    private CommFuture<Void> allGather(CollectiveOp o, long fpCount, DataType type, long bytes, MemorySegment send, MemorySegment recv,
                                       long blk, long[] off, long[] len, long ownOffset, Mode mode) {
        boolean inPlace = send.equals(recv);
        CollectiveCall c = frame.call(mode).of(o, fpCount, type, null, -1, bytes, null, recv);
        c.blockBytes = blk;
        c.recvOff = off;
        c.recvLen = len;
        c.inPlace = inPlace;
        c.mine = inPlace ? recv : send;
        c.mineOffset = inPlace ? ownOffset : 0;
        return frame.start(c, mode);
    }
}
