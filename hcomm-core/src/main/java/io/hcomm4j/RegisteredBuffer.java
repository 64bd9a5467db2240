package io.hcomm4j;

import java.lang.foreign.MemorySegment;

/**
 * A buffer of registered, shareable memory from a session's {@link Memory}: {@link #segment()} is exactly the requested
 * size, page-aligned (4096), off-heap and usable from any thread, and lies in a shared-memory file that same-host peers
 * can map. Contents of a new buffer are unspecified.
 *
 * <p>{@link #close()} gives the memory back to the pool. After close the segment must not be used: by default nothing
 * stops such a use (like a use after {@code free}); with {@code HCOMM_MEM_DEBUG=1} it throws
 * {@link IllegalStateException}. A buffer that becomes unreachable without close is reported as a leak. Thread-safe.
 */
public interface RegisteredBuffer extends AutoCloseable {
    /**
     * The buffer's memory: {@link #byteSize()} bytes, page-aligned.
     *
     * @throws IllegalStateException if the buffer is closed
     */
    MemorySegment segment();

    /** Bytes of the buffer: what was requested. */
    long byteSize();

    /** True once {@link #close()} was called. */
    boolean isClosed();

    /**
     * Gives the memory back to the pool. Idempotent.
     *
     * @throws IllegalStateException in debug mode, if an operation (a send or receive in progress) still uses the
     *                               segment; the buffer then stays open
     */
    @Override
    void close();
}
