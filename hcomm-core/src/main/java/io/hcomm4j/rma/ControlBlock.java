package io.hcomm4j.rma;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The layout of a window member's control block: a small registered buffer next to its data that same-host members
 * map (the lock word and the signal counters), and that the member's own progress engine uses on behalf of members on
 * other hosts. Every field on its own 128-byte line.
 *
 * <pre>
 *   0  i64 lock      bit 63: held exclusively; bits 32-62: the exclusive holder's world rank + 1; bits 0-31: shared holders
 * 128  i32 sleeping  1: this member's thread is about to block in waitSignal; a signaller that sees it rings its doorbell
 * 256  i64 signal[origin][index]   origin * Window.SIGNALS + index, counts of landed putSignals
 * </pre>
 */
final class ControlBlock {
    static final long LOCK = 0;
    static final long SLEEPING = 128;
    static final long SIGNALS = 256;
    private static final long EXCLUSIVE = 1L << 63;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private ControlBlock() {
    }

    /** Bytes of the control block of a window of {@code members} ranks. */
    static long bytes(int members) {
        return SIGNALS + (long) members * io.hcomm4j.Window.SIGNALS * 8;
    }

    static long signalOffset(int origin, int index) {
        return SIGNALS + ((long) origin * io.hcomm4j.Window.SIGNALS + index) * 8;
    }

    /** One attempt to take the lock: true if granted. */
    static boolean tryLock(MemorySegment ctrl, boolean exclusive, int worldRank) {
        long w = (long) LONG.getVolatile(ctrl, LOCK);
        if (exclusive) {
            return w == 0 && LONG.compareAndSet(ctrl, LOCK, 0L, EXCLUSIVE | ((long) worldRank + 1) << 32);
        }
        return (w & EXCLUSIVE) == 0 && LONG.compareAndSet(ctrl, LOCK, w, w + 1);
    }

    static void unlock(MemorySegment ctrl, boolean exclusive) {
        if (exclusive) LONG.setVolatile(ctrl, LOCK, 0L);
        else LONG.getAndAdd(ctrl, LOCK, -1L);
    }

    /** The world rank holding the lock exclusively, or -1. */
    static int exclusiveHolder(MemorySegment ctrl) {
        long w = (long) LONG.getVolatile(ctrl, LOCK);
        return (w & EXCLUSIVE) == 0 ? -1 : (int) ((w & ~EXCLUSIVE) >>> 32) - 1;
    }

    static String describeLock(MemorySegment ctrl) {
        long w = (long) LONG.getVolatile(ctrl, LOCK);
        if (w == 0) return "free";
        if ((w & EXCLUSIVE) != 0) return "held exclusively by world rank " + (((w & ~EXCLUSIVE) >>> 32) - 1);
        return "held shared by " + (w & 0xFFFF_FFFFL) + " origin(s)";
    }

    /** Adds one to {@code origin}'s counter {@code index}; true if the owner sleeps and must be woken. */
    static boolean signal(MemorySegment ctrl, int origin, int index) {
        LONG.getAndAdd(ctrl, signalOffset(origin, index), 1L); // a full fence on x86: orders the data before it
        return (int) INT.getVolatile(ctrl, SLEEPING) != 0;
    }

    static long signals(MemorySegment ctrl, int origin, int index) {
        return (long) LONG.getAcquire(ctrl, signalOffset(origin, index));
    }

    static void consumeSignals(MemorySegment ctrl, int origin, int index, long count) {
        LONG.getAndAdd(ctrl, signalOffset(origin, index), -count);
    }

    static void sleeping(MemorySegment ctrl, boolean yes) {
        INT.setVolatile(ctrl, SLEEPING, yes ? 1 : 0);
        if (yes) VarHandle.fullFence();
    }
}
