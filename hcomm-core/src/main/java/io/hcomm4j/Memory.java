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

    /** The pool's accounting now. */
    MemoryStats stats();

    /** True once the pool is closed (with its session). */
    boolean isClosed();
}
