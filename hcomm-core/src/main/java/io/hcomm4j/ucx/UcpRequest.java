package io.hcomm4j.ucx;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A tag send or receive in flight ({@code ucs_status_ptr_t} of {@code ucp_tag_send_nbx} / {@code ucp_tag_recv_nbx}),
 * or one that completed at once. Polled: {@link #test} reads its status (the owning worker must be progressed), and
 * {@link #close} frees it.
 */
public final class UcpRequest implements AutoCloseable {
    // ucp_request_param_t as API 1.13 lays it out: op_attr_mask (u32), flags (u32), request, cb, datatype, user_data,
    // reply_buffer, memory_type (+pad), recv_info, memh
    static final long PARAMS_BYTES = 72;
    static final int ATTR_RECV_INFO = 1 << 7;
    static final int ATTR_MEMH = 1 << 8;
    static final long MEMH_OFFSET = 64;
    /** ucp_tag_recv_info_t: sender_tag (u64), length (size_t). */
    static final long INFO_BYTES = 16;

    private final Ucp ucp;
    private final boolean recv;
    private MemorySegment handle; // null: completed at once, or freed
    private int status = Ucp.UCS_INPROGRESS;
    /** A receive's ucp_tag_recv_info_t (filled at once, or by ucp_tag_recv_request_test). */
    private final MemorySegment info;
    /** Memory of this request's own, closed with it; or null. */
    private final Arena arena;
    /** What must stay reachable until this request completes ({@link #keep}); or null. */
    @SuppressWarnings("unused")
    private Object kept;

    UcpRequest(Ucp ucp, boolean recv, Arena arena, MemorySegment info, MemorySegment statusPtr, String call) {
        this.ucp = ucp;
        this.recv = recv;
        this.arena = arena;
        this.info = info;
        if (statusPtr.address() == 0) {
            status = Ucp.UCS_OK;
        } else if (Ucp.isError(statusPtr)) {
            status = Ucp.errorOf(statusPtr);
            ucp.check(status, call); // the caller, which made the arena, closes it
        } else {
            handle = statusPtr;
        }
    }

    /** Whether it has completed (well or not; {@link #status} says which). */
    public boolean test() {
        if (status != Ucp.UCS_INPROGRESS) return true;
        try {
            int st = recv ? (byte) ucp.tagRecvRequestTest.invokeExact(handle, info) : (byte) ucp.requestCheckStatus.invokeExact(handle);
            status = st;
        } catch (Throwable e) {
            throw Ucp.failed("request status", e);
        }
        return status != Ucp.UCS_INPROGRESS;
    }

    /** UCS_OK (0), UCS_INPROGRESS (1) or a negative error; see {@link Ucp#statusText}. */
    public int status() {
        return status;
    }

    /** Keeps {@code o} (memory UCX may read until this request completes) reachable as long as this request is. */
    void keep(Object o) {
        kept = o;
    }

    /** UCX's text for {@link #status}. */
    public String statusText() {
        return ucp.statusText(status);
    }

    /** A completed receive's message length in bytes. */
    public long length() {
        return info.get(JAVA_LONG, 8);
    }

    /** A completed receive's sender tag. */
    public long senderTag() {
        return info.get(JAVA_LONG, 0);
    }

    /** Frees the request (a pending one is then completed by UCX without telling). Idempotent. */
    @Override
    public void close() {
        if (handle != null) {
            try {
                ucp.requestFree.invokeExact(handle);
            } catch (Throwable e) {
                throw Ucp.failed("ucp_request_free", e);
            }
            handle = null;
        }
        if (arena != null && arena.scope().isAlive()) arena.close();
    }
}
