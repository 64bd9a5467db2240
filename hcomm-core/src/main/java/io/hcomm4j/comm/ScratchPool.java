package io.hcomm4j.comm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Off-heap scratch memory for collective algorithms, in power-of-two size classes, reused across ops so
 * steady-state ops allocate nothing. Shared (not thread-confined): the progress engine of whichever thread
 * polls reads and writes it. Freed when the session closes.
 */
final class ScratchPool implements AutoCloseable {
    private static final int CLASSES = 48;
    private final Arena arena = Arena.ofShared();
    @SuppressWarnings("unchecked")
    private final ConcurrentLinkedQueue<MemorySegment>[] free = new ConcurrentLinkedQueue[CLASSES];

    ScratchPool() {
        for (int i = 0; i < CLASSES; i++) free[i] = new ConcurrentLinkedQueue<>();
    }

    private static int sizeClass(long bytes) {
        return bytes <= 64 ? 6 : 64 - Long.numberOfLeadingZeros(bytes - 1);
    }

    /** A segment of at least {@code bytes}; give it back with {@link #give}. */
    MemorySegment take(long bytes) {
        int c = sizeClass(Math.max(1, bytes));
        MemorySegment s = free[c].poll();
        if (s != null) return s;
        synchronized (arena) {
            return arena.allocate(1L << c, 64);
        }
    }

    void give(MemorySegment s) {
        free[sizeClass(s.byteSize())].add(s);
    }

    @Override
    public void close() {
        arena.close();
    }
}
