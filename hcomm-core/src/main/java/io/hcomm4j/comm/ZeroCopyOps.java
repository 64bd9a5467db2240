package io.hcomm4j.comm;

import java.lang.foreign.MemorySegment;

/**
 * What the op classes of a {@link ZeroCopyEngine} share: the engine (its protocol steps) and its per-op arrays of
 * every rank's buffers, mapped here. Each kind of op is a final subclass, called through its own type (no virtual
 * dispatch among them). Every op's part runs in the same {@code try { ...; ok = true; } finally { e.finish(..., ok); }},
 * written out in each: a callback would capture on the hot path.
 */
abstract sealed class ZeroCopyOps permits ZeroCopyReductions, ZeroCopyDataMovement, ZeroCopyBlockTables {
    final ZeroCopyEngine e;
    final int rank;
    final int n;
    /** Rank q's send buffer of the current op: segment and offset (this rank's own, or the peer's file mapped here). */
    final MemorySegment[] sendSeg;
    final long[] sendOff;
    /** Rank q's receive buffer of the current op, likewise. */
    final MemorySegment[] recvSeg;
    final long[] recvOff;
    /** The one length of equal blocks (the V forms' {@code len} with {@code off == null}). */
    final long[] oneLen = new long[1];

    ZeroCopyOps(ZeroCopyEngine e) {
        this.e = e;
        this.rank = e.rank;
        this.n = e.n;
        this.sendSeg = e.sendSeg;
        this.sendOff = e.sendOff;
        this.recvSeg = e.recvSeg;
        this.recvOff = e.recvOff;
    }

    static boolean sameOrDisjoint(MemorySegment a, MemorySegment b, long bytes) {
        return sameAddress(a, 0, b, 0) || disjoint(a, 0, bytes, b, bytes);
    }

    /** {@code a + aOff} and {@code b + bOff} are the same address (both native). */
    static boolean sameAddress(MemorySegment a, long aOff, MemorySegment b, long bOff) {
        return a.isNative() && b.isNative() && a.address() + aOff == b.address() + bOff;
    }

    /**
     * {@code aBytes} of {@code a} from {@code aOff} and the first {@code bBytes} of {@code b} do not overlap (a heap and
     * a native segment never do).
     */
    static boolean disjoint(MemorySegment a, long aOff, long aBytes, MemorySegment b, long bBytes) {
        if (a.isNative() != b.isNative() || aBytes == 0 || bBytes == 0) return true;
        if (!a.isNative()) return a.heapBase().orElse(null) != b.heapBase().orElse(null);
        long x = a.address() + aOff;
        long y = b.address();
        return x + aBytes <= y || y + bBytes <= x;
    }
}
