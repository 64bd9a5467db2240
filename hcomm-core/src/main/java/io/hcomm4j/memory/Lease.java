package io.hcomm4j.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.Consumer;

/**
 * One allocation of a slot: the state that outlives the {@link Buffer} so that a buffer which becomes unreachable
 * without {@code close()} can be reported and its slot reclaimed. It references neither the buffer nor its segment
 * (a cleanup action that did would keep them reachable forever).
 *
 * <p>Either way the lease is the cleanup action of an automatic arena, run by the JDK's cleaner (no thread of ours)
 * once the arena is unreachable. Default mode: that arena is the scope of the buffer's segment, so it runs once
 * nothing references the segment, any slice of it or the buffer, and reclaiming then is always safe. Debug mode: the
 * segment has its own shared arena, closed when the buffer is closed (a later access throws), and the automatic arena
 * is a tracker only the buffer references, so a leak is found as soon as the buffer is unreachable; the shared arena
 * is closed before the slot is reclaimed.
 */
final class Lease implements Consumer<MemorySegment> {
    static final int LIVE = 0;
    static final int CLOSED = 1;
    static final int LEAKED = 2;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Lease.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final MemoryPool pool;
    final Slot slot;
    final long bytes;
    /** Debug mode: where the buffer was allocated; else null. */
    final Throwable site;
    /** Debug mode: the buffer's own arena; else null. */
    final Arena arena;
    private volatile int state;

    Lease(MemoryPool pool, Slot slot, long bytes, Throwable site, Arena arena) {
        this.pool = pool;
        this.slot = slot;
        this.bytes = bytes;
        this.site = site;
        this.arena = arena;
    }

    boolean live() {
        return state == LIVE;
    }

    /** {@link Buffer#close()}: the first call returns the slot to the pool; later calls do nothing. */
    void close() {
        if (!STATE.compareAndSet(this, LIVE, CLOSED)) return;
        if (arena != null) {
            try {
                arena.close();
            } catch (IllegalStateException e) {
                state = LIVE;
                throw new IllegalStateException("a buffer of " + bytes + " bytes cannot be closed while an operation "
                        + "still uses its segment (a send or receive in progress); close it when that has completed", e);
            }
        }
        pool.release(this);
    }

    /** The automatic arena became unreachable: the segment (default mode) or the buffer (debug mode) is gone. */
    @Override
    public void accept(MemorySegment ignored) {
        if (!STATE.compareAndSet(this, LIVE, LEAKED)) return; // closed properly
        boolean reclaimed = true;
        if (arena != null) {
            try {
                arena.close();
            } catch (IllegalStateException e) {
                reclaimed = false; // an I/O operation still holds the segment: the slot stays out of the pool
            }
        }
        pool.leaked(this, reclaimed);
    }

    /** Where a debug-mode buffer was allocated. */
    static final class AllocationSite extends Throwable {
        private static final long serialVersionUID = 1L;

        AllocationSite() {
            super("allocated by thread " + Thread.currentThread().getName(), null, false, true);
        }
    }
}
