package io.hcomm4j.memory;

import io.hcomm4j.RegisteredBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;

/**
 * A buffer of registered, shareable memory from a {@link MemoryPool}: {@link #segment()} is exactly the requested
 * size, page-aligned (4096), off-heap and usable from any thread, and lies in a shared-memory file that same-host
 * peers can map. Contents of a new buffer are unspecified (zero the first time the memory is used, whatever the
 * previous user left when it is reused).
 *
 * <p>{@link #close()} gives the memory back to the pool, which hands it out again without a new mapping. After close
 * the segment must not be used: by default nothing stops such a use (it may read or corrupt a later buffer, like a
 * use after {@code free}); with {@code HCOMM_MEM_DEBUG=1} it throws {@link IllegalStateException}. A buffer that
 * becomes unreachable without close is reported as a leak (see {@link MemoryPool}). Thread-safe.
 */
public final class Buffer implements RegisteredBuffer {
    private final Lease lease;
    private final MemorySegment segment;
    /** Debug mode: an automatic arena only this buffer references, whose cleanup reports a leak; else null. */
    @SuppressWarnings({"unused", "FieldCanBeLocal"})
    private final Arena tracker;

    Buffer(Lease lease, MemorySegment segment, Arena tracker) {
        this.lease = lease;
        this.segment = segment;
        this.tracker = tracker;
    }

    /**
     * The buffer's memory: {@link #byteSize()} bytes, page-aligned.
     *
     * @throws IllegalStateException if the buffer is closed
     */
    public MemorySegment segment() {
        if (!lease.live()) throw new IllegalStateException("the buffer is closed");
        return segment;
    }

    /** Bytes of the buffer: what was requested. */
    public long byteSize() {
        return segment.byteSize();
    }

    /** True once {@link #close()} was called. */
    public boolean isClosed() {
        return !lease.live();
    }

    /**
     * Gives the memory back to the pool. Idempotent. The segment must not be used afterwards (see the class comment).
     *
     * @throws IllegalStateException in debug mode, if an operation (a send or receive in progress) still uses the
     *                               segment; the buffer then stays open
     */
    @Override
    public void close() {
        try {
            lease.close();
        } finally {
            // until the lease is closed, neither the buffer nor its segment may look unreachable (a leak)
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(segment);
        }
    }

    @Override
    public String toString() {
        return "Buffer{" + segment.byteSize() + " bytes at 0x" + Long.toHexString(segment.address()) + " in "
                + lease.slot.mapping.file.getFileName() + "+" + lease.slot.offset + (lease.live() ? "" : ", closed") + "}";
    }
}
