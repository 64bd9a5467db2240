package io.hcomm4j.comm;

import static io.hcomm4j.comm.ControlLayout.F_CAPABLE;
import static io.hcomm4j.comm.ControlLayout.F_SAFE;
import static io.hcomm4j.comm.ControlLayout.F_SEND;
import static io.hcomm4j.comm.ControlLayout.F_WANT;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The ops of a {@link ZeroCopyEngine} where a rank's blocks lie where only it knows: scatter(V) (the root publishes
 * where each block lies) and all-to-all(V) (every rank publishes where its block for each rank lies), through the
 * per-rank block tables of the control mapping ({@link ControlLayout#table}); each receiver checks the length a sender
 * published against the one it expects. Equal blocks publish nothing. Each op publishes its descriptor, falls back
 * (returns false) when some rank cannot run it here, else does its part between the engine's {@code arrive} and
 * {@code finish} (see {@link ZeroCopyEngine} for the protocol and its memory ordering).
 */
final class ZeroCopyBlockTables extends ZeroCopyOps {
    ZeroCopyBlockTables(ZeroCopyEngine e) {
        super(e);
    }

    /** Scatter of equal blocks ({@code blockBytes} each) from {@code root}: {@link #scatterV} with block q at q * blockBytes. */
    boolean scatter(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long blockBytes, int root, boolean want) {
        oneLen[0] = blockBytes;
        return scatterV(seq, fp, op, send, null, oneLen, recv, root, want);
    }

    /**
     * Scatter from {@code root}: the root offers its send buffer (up to its largest {@code off + len}; staged if
     * unregistered) and publishes where each block lies; rank q copies its {@code len[q]} bytes from there into
     * {@code recv}. {@code off} is the root's (others pass anything), {@code len} everybody's. With {@code off == null}
     * the blocks are equal, {@code len[0]} bytes each, block q at {@code q * len[0]} (nothing to publish).
     */
    boolean scatterV(long seq, int fp, String op, MemorySegment send, long[] off, long[] len, MemorySegment recv, int root,
                     boolean want) {
        if (!e.ready(op)) return false;
        int flags = e.base(want) | F_SAFE;
        if (rank == root) {
            long total = off == null ? n * len[0] : 0;
            for (int q = 0; off != null && q < n; q++) total = Math.max(total, off[q] + len[q]);
            MemorySegment from = e.offer(send, 0, total, want, disjoint(send, 0, total, recv, recv.byteSize()));
            flags |= e.sendAt(from, 0, total);
            if (off != null) publishTable(off, len);
        }
        int all = e.arrive(seq, fp, op, flags);
        int need = F_CAPABLE | F_WANT;
        if ((all & need) != need || (e.flagsOf(root) & F_SEND) == 0) return e.fellBack();
        boolean ok = false;
        try {
            long at = blockAt(root, rank, off, len);
            long bytes = blockLen(root, rank, off, len);
            if (off != null && bytes != len[rank]) {
                throw new io.hcomm4j.CollectiveMismatchException("rank " + rank + ": " + op + ": the root (rank " + root + ") sends "
                        + bytes + " bytes to this rank, whose count says " + len[rank] + ": the ranks called it with different counts");
            }
            if (bytes > 0) {
                if (rank == root) {
                    MemorySegment.copy(send, at, recv, 0, bytes);
                } else {
                    e.peerBuffer(root, true, at + bytes);
                    MemorySegment.copy(sendSeg[root], sendOff[root] + at, recv, 0, bytes);
                }
            }
            ok = true;
        } finally {
            e.finish(seq, op, ok);
        }
        return true;
    }

    /**
     * All-to-all: every rank offers its send buffer ({@code sendBytes}; staged if unregistered) and publishes where its
     * block for each rank lies; each rank pulls its block of every rank's into {@code recv} at {@code rOff[q]} (own block
     * first, then the ranks after itself, so the ranks read different peers at a time), checking that the sender's
     * length is the one it expects. {@code recv} must not overlap {@code send} on any rank (else every rank takes the
     * transport). With {@code sOff == null} and {@code rOff == null} the blocks are equal, {@code sLen[0]} bytes each,
     * block q at {@code q * sLen[0]} on both sides (nothing to publish or check).
     */
    boolean allToAllV(long seq, int fp, String op, MemorySegment send, long[] sOff, long[] sLen, long sendBytes,
                      MemorySegment recv, long[] rOff, long[] rLen, long recvBytes, boolean want) {
        if (!e.ready(op)) return false;
        int flags = e.base(want);
        MemorySegment offered = e.offer(send, 0, sendBytes, want, disjoint(send, 0, sendBytes, recv, recvBytes));
        flags |= e.sendAt(offered, 0, sendBytes);
        // the others read this rank's send buffer while it writes its receive buffer
        if (disjoint(offered, 0, sendBytes, recv, recvBytes)) flags |= F_SAFE;
        if (sOff != null) publishTable(sOff, sLen);
        int all = e.arrive(seq, fp, op, flags);
        int need = F_CAPABLE | F_WANT | F_SEND | F_SAFE;
        if ((all & need) != need) return e.fellBack();
        boolean ok = false;
        try {
            for (int i = 0; i < n; i++) {
                int q = rank + i < n ? rank + i : rank + i - n; // own block first, then the next ranks
                long at = blockAt(q, rank, sOff, sLen);
                long bytes = blockLen(q, rank, sOff, sLen);
                if (sOff != null && bytes != rLen[q]) {
                    throw new io.hcomm4j.CollectiveMismatchException("rank " + rank + ": " + op + ": rank " + q + " sends " + bytes
                            + " bytes to this rank, whose recvCounts[" + q + "] says " + rLen[q] + ": the ranks called it with different counts");
                }
                if (bytes == 0) continue;
                long to = rOff == null ? q * bytes : rOff[q];
                if (q == rank) {
                    MemorySegment.copy(offered, at, recv, to, bytes);
                } else {
                    e.peerBuffer(q, true, at + bytes);
                    MemorySegment.copy(sendSeg[q], sendOff[q] + at, recv, to, bytes);
                }
            }
            ok = true;
        } finally {
            e.finish(seq, op, ok);
        }
        return true;
    }

    /**
     * All-to-all of equal blocks ({@code blockBytes} each): {@link #allToAllV} with block q at q * blockBytes on both
     * sides. {@code recv} must not overlap {@code send} (checked by the caller).
     */
    boolean allToAll(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long blockBytes, boolean want) {
        oneLen[0] = blockBytes;
        return allToAllV(seq, fp, op, send, null, oneLen, n * blockBytes, recv, null, oneLen, n * blockBytes, want);
    }

    /** Publishes this rank's block table (before {@link ZeroCopyEngine#arrive}, whose release store makes it visible). */
    private void publishTable(long[] off, long[] len) {
        long t = ControlLayout.table(n, rank, e.opTicket());
        for (int q = 0; q < n; q++) {
            e.ctrl.set(ValueLayout.JAVA_LONG, t + 8L * q, off[q]);
            e.ctrl.set(ValueLayout.JAVA_LONG, t + 8L * (n + q), len[q]);
        }
    }

    /** Where rank {@code p}'s block for rank {@code q} lies in its buffer: q * len[0] for equal blocks, else its table's. */
    private long blockAt(int p, int q, long[] off, long[] len) {
        return off == null ? q * len[0] : tableEntry(p, q, false);
    }

    /** The length of rank {@code p}'s block for rank {@code q}: len[0] for equal blocks, else its table's. */
    private long blockLen(int p, int q, long[] off, long[] len) {
        return off == null ? len[0] : tableEntry(p, q, true);
    }

    /** Offset ({@code length} false) or length of rank {@code p}'s block for rank {@code q}, from its published table. */
    private long tableEntry(int p, int q, boolean length) {
        return e.ctrl.get(ValueLayout.JAVA_LONG, ControlLayout.table(n, p, e.opTicket()) + 8L * (length ? n + q : q));
    }
}
