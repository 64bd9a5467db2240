package io.hcomm4j;

/**
 * A session's pool of registered memory ({@link Hcomm#memory()}, {@link Communicator#memory()}): buffers in
 * shared-memory files that same-host peers can map, so that collectives between ranks of one host read them in place.
 * Size classes, reuse, a limit ({@code HCOMM_MEM_POOL_MAX}) and leak reports; closed with the session. Thread-safe.
 */
public interface Memory {
    /**
     * A buffer of exactly {@code bytes} bytes (page-aligned), reusing a closed buffer's memory of the same size class
     * if there is one, else mapping more (pre-faulted) shared memory.
     *
     * @throws IllegalArgumentException if {@code bytes <= 0}
     * @throws MemoryLimitException     if the pool would map more than its limit
     * @throws IllegalStateException    if the pool is closed
     * @throws HcommException           if the shared-memory file cannot be created (e.g. the file system is full)
     */
    RegisteredBuffer allocate(long bytes);

    /**
     * A buffer of {@code count} elements of {@code type}: {@code allocate(count * type.byteSize())}.
     *
     * @throws IllegalArgumentException if {@code count <= 0} or the size overflows
     */
    RegisteredBuffer allocate(DataType type, long count);

    /**
     * A new {@link java.lang.foreign.Arena} that allocates from this pool: code that takes an arena (or a
     * {@link java.lang.foreign.SegmentAllocator}) gets registered memory, and with it the same-host zero-copy paths,
     * without handling buffers. Its segments are zeroed, aligned as asked, usable from any thread, and have the arena's
     * own scope: {@code close()} invalidates them all (a later access throws {@link IllegalStateException}) and gives
     * their memory back to the pool. Requests of 64 KiB and more get a pool buffer each; smaller ones share 256 KiB
     * buffers. Allocating and closing are thread-safe.
     *
     * <pre>{@code
     * try (Arena arena = comm.memory().arena()) {
     *     MemorySegment grads = arena.allocate(ValueLayout.JAVA_FLOAT, n);
     *     comm.allReduce(grads, grads, n, DataType.FLOAT32, ReduceOp.SUM);   // in shared memory, no staging copy
     * }
     * }</pre>
     *
     * <p>An allocation throws what {@link #allocate(long)} throws ({@link MemoryLimitException} past
     * {@code HCOMM_MEM_POOL_MAX}, {@link IllegalStateException} once the pool or the arena is closed).
     */
    java.lang.foreign.Arena arena();

    /** The pool's accounting now. */
    MemoryStats stats();

    /** True once the pool is closed (with its session). */
    boolean isClosed();
}
