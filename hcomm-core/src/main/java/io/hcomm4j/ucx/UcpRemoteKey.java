package io.hcomm4j.ucx;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A peer's registered memory as one endpoint reaches it ({@code ucp_rkey_h}, unpacked from the bytes the peer's
 * {@link UcpMemory#packKey} made): what {@link UcpEndpoint#put}, {@link UcpEndpoint#get} and
 * {@link UcpEndpoint#atomic} name with a remote address inside that memory.
 */
public final class UcpRemoteKey implements AutoCloseable {
    static final AtomicInteger OPEN = new AtomicInteger();

    private final Ucp ucp;
    final MemorySegment handle;
    private boolean closed;

    UcpRemoteKey(Ucp ucp, MemorySegment handle) {
        this.ucp = ucp;
        this.handle = handle;
        OPEN.incrementAndGet();
    }

    /** Releases the key (before its endpoint closes). Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try {
            ucp.rkeyDestroy.invokeExact(handle);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_rkey_destroy", e);
        } finally {
            OPEN.decrementAndGet();
        }
    }
}
