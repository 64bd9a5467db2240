package io.hcomm4j.comm;

import static io.hcomm4j.comm.ControlLayout.F_CAPABLE;
import static io.hcomm4j.comm.ControlLayout.F_SAFE;
import static io.hcomm4j.comm.ControlLayout.F_SEND;
import static io.hcomm4j.comm.ControlLayout.F_WANT;

import io.hcomm4j.algo.ZeroCopyCollectives;
import java.lang.foreign.MemorySegment;

/**
 * The data-movement ops of a {@link ZeroCopyEngine} whose blocks every rank can place by itself: broadcast (the
 * others copy from the root's buffer), all-gather(V) (every rank pulls the others' blocks) and gather(V) (the root
 * pulls them). Unregistered memory a peer reads is staged through the engine's registered buffer. Each op publishes
 * its descriptor, falls back (returns false) when some rank cannot run it here, else does its part between the
 * engine's {@code arrive} and {@code finish} (see {@link ZeroCopyEngine} for the protocol and its memory ordering).
 */
final class ZeroCopyDataMovement extends ZeroCopyOps {
    /** Broadcasts from this size on, with every rank's buffer registered, are copied in parallel slices. */
    static final long BCAST_SPLIT_MIN = 64 * 1024;

    ZeroCopyDataMovement(ZeroCopyEngine e) {
        super(e);
    }

    /** Broadcast of {@code bytes} from {@code root}: the others copy from the root's buffer (in slices, in parallel, when all are registered). */
    boolean broadcast(long seq, int fp, String op, MemorySegment buf, long bytes, int root, boolean want) {
        if (!e.ready(op)) return false;
        int flags = e.base(want) | F_SAFE;
        MemorySegment from = rank == root ? e.offer(buf, 0, bytes, want, true) : buf;
        flags |= e.sendAt(from, 0, bytes);
        int all = e.arrive(seq, fp, op, flags);
        int need = F_CAPABLE | F_WANT;
        if ((all & need) != need || (e.flagsOf(root) & F_SEND) == 0) return e.fellBack();
        boolean split = (all & F_SEND) != 0 && bytes >= BCAST_SPLIT_MIN;
        boolean ok = false;
        try {
            if (split) {
                e.map(true, from, bytes);
                ZeroCopyCollectives.broadcastSplit(sendSeg, sendOff, rank, n, root, bytes);
            } else if (rank != root && bytes > 0) {
                e.peerBuffer(root, true, bytes);
                MemorySegment.copy(sendSeg[root], sendOff[root], buf, 0, bytes);
            }
            ok = true;
        } finally {
            e.finish(seq, op, ok);
        }
        return true;
    }

    /**
     * All-gather, every rank pulling the others' blocks: equal blocks of {@code blockBytes} ({@code off == null}), or
     * block {@code r} of {@code len[r]} bytes at {@code off[r]} of the receive buffer. {@code mine} is this rank's
     * block to contribute (its send buffer, or its own block of the receive buffer when in place).
     */
    boolean allGather(long seq, int fp, String op, MemorySegment mine, long mineOff, MemorySegment recv, long blockBytes, long[] off,
                      long[] len, boolean want) {
        if (!e.ready(op)) return false;
        long myOff = off == null ? rank * blockBytes : off[rank];
        long myLen = off == null ? blockBytes : len[rank];
        long recvBytes = 0;
        for (int r = 0; r < n; r++) recvBytes = Math.max(recvBytes, off == null ? (r + 1) * blockBytes : off[r] + len[r]);
        int flags = e.base(want);
        // the others read this rank's block while it writes theirs into its receive buffer (in place: its own block
        // there is already in place, whatever it offers)
        boolean inPlace = sameAddress(recv, myOff, mine, mineOff);
        MemorySegment offered = e.offer(mine, mineOff, myLen, want, inPlace || disjoint(mine, mineOff, myLen, recv, recvBytes));
        if (offered != mine) {
            mine = offered;
            mineOff = 0;
        }
        flags |= e.sendAt(mine, mineOff, myLen);
        if (inPlace || disjoint(mine, mineOff, myLen, recv, recvBytes)) flags |= F_SAFE;
        int all = e.arrive(seq, fp, op, flags);
        int need = F_CAPABLE | F_WANT | F_SEND | F_SAFE;
        if ((all & need) != need) return e.fellBack();
        boolean ok = false;
        try {
            for (int q = 0; q < n; q++) {
                if (q != rank) e.peerBuffer(q, true, off == null ? blockBytes : len[q]);
            }
            if (myLen > 0 && !inPlace) MemorySegment.copy(mine, mineOff, recv, myOff, myLen);
            if (off == null) {
                oneLen[0] = blockBytes;
                ZeroCopyCollectives.allGather(sendSeg, sendOff, rank, n, recv, 0, null, oneLen);
            } else {
                ZeroCopyCollectives.allGather(sendSeg, sendOff, rank, n, recv, 0, off, len);
            }
            ok = true;
        } finally {
            e.finish(seq, op, ok);
        }
        return true;
    }

    /** Gather of equal blocks ({@code blockBytes} each) to {@code root}: {@link #gatherV} with block q at q * blockBytes. */
    boolean gather(long seq, int fp, String op, MemorySegment mine, MemorySegment recv, long blockBytes, int root, boolean want) {
        oneLen[0] = blockBytes;
        return gatherV(seq, fp, op, mine, recv, null, oneLen, root, want);
    }

    /**
     * Gather to {@code root}: rank q offers its block ({@code len[q]} bytes of its {@code mine}; staged if
     * unregistered), the root pulls every other rank's into {@code recv} at {@code off[q]} and copies its own. Every rank
     * knows every length; only the root's offsets are used. With {@code off == null} the blocks are equal, {@code len[0]}
     * bytes each, block q at {@code q * len[0]}.
     */
    boolean gatherV(long seq, int fp, String op, MemorySegment mine, MemorySegment recv, long[] off, long[] len, int root,
                    boolean want) {
        if (!e.ready(op)) return false;
        long myLen = off == null ? len[0] : len[rank];
        int flags = e.base(want) | F_SAFE;
        // nobody reads the root's block
        flags |= rank == root ? F_SEND : e.sendAt(e.offer(mine, 0, myLen, want, true), 0, myLen);
        int all = e.arrive(seq, fp, op, flags);
        int need = F_CAPABLE | F_WANT | F_SEND;
        if ((all & need) != need) return e.fellBack();
        boolean ok = false;
        try {
            if (rank == root) {
                for (int q = 0; q < n; q++) {
                    if (q != rank) e.peerBuffer(q, true, off == null ? len[0] : len[q]);
                }
                if (myLen > 0) MemorySegment.copy(mine, 0, recv, off == null ? rank * myLen : off[rank], myLen);
                ZeroCopyCollectives.allGather(sendSeg, sendOff, rank, n, recv, 0, off, len);
            }
            ok = true;
        } finally {
            e.finish(seq, op, ok);
        }
        return true;
    }
}
