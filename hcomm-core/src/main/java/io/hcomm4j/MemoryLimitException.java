package io.hcomm4j;

/**
 * An allocation from a session's {@link Memory} would take the pool's shared memory past its limit
 * ({@code HCOMM_MEM_POOL_MAX}). The message names the requested bytes, the bytes in use, the bytes mapped and the
 * limit. Close buffers that are no longer needed, or raise the limit.
 */
public class MemoryLimitException extends HcommException {
    private static final long serialVersionUID = 1L;
    private final long requestedBytes;
    private final long inUseBytes;
    private final long limitBytes;

    /**
     * @param message        what was asked and what the pool holds
     * @param requestedBytes bytes the failed allocation asked for
     * @param inUseBytes     bytes held by open buffers at the time
     * @param limitBytes     the pool's limit
     */
    public MemoryLimitException(String message, long requestedBytes, long inUseBytes, long limitBytes) {
        super(message);
        this.requestedBytes = requestedBytes;
        this.inUseBytes = inUseBytes;
        this.limitBytes = limitBytes;
    }

    /** Bytes the failed allocation asked for. */
    public long requestedBytes() {
        return requestedBytes;
    }

    /** Bytes held by open buffers (whole size classes) when the allocation failed. */
    public long inUseBytes() {
        return inUseBytes;
    }

    /** The pool's limit in bytes. */
    public long limitBytes() {
        return limitBytes;
    }
}
