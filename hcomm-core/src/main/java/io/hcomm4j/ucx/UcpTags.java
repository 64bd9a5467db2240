package io.hcomm4j.ucx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Tag sends and receives of one worker for a caller that keeps its own bookkeeping: buffers given as native addresses,
 * requests returned as numbers (0: completed at once), polled with {@link #status} and freed with {@link #free}. Nothing
 * is allocated per call. For large messages straight between the two sides' buffers (UCX's rendezvous: RDMA where the
 * fabric has it).
 */
public final class UcpTags {
    /** UCP_OP_ATTR_FLAG_NO_IMM_CMPL. */
    private static final int NO_IMMEDIATE_COMPLETION = 1 << 16;
    private final UcpWorker worker;
    private final Ucp ucp;
    /** ucp_request_param_t, all zero: contiguous bytes, no callback (read only, shared by the calling threads). */
    private final MemorySegment params;

    UcpTags(UcpWorker worker, Arena arena) {
        this.worker = worker;
        this.ucp = worker.ucp();
        this.params = arena.allocate(UcpRequest.PARAMS_BYTES, 8);
    }

    /**
     * Sends the {@code length} bytes at {@code address} to {@code ep}'s peer with {@code tag}: 0 if done at once, else the
     * request; the bytes must stay untouched until it completes.
     *
     * @throws UcxException if UCX refused the send
     */
    public long send(UcpEndpoint ep, long address, long length, long tag) {
        return send(ep, address, length, tag, params);
    }

    /** As {@link #send(UcpEndpoint, long, long, long)}, with parameters from {@link #params} (one caller at a time each). */
    public long send(UcpEndpoint ep, long address, long length, long tag, MemorySegment params) {
        long st;
        try {
            st = (long) ucp.tagSendNbxRaw.invokeExact(ep.handle, address, length, tag, params);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_tag_send_nbx", e);
        }
        if (Ucp.isError(st)) ucp.check((byte) st, "ucp_tag_send_nbx");
        return st;
    }

    /** Parameters of a plain send or receive (contiguous bytes, no callback), for {@link #useMemory}. */
    public static MemorySegment params(Arena arena) {
        return arena.allocate(UcpRequest.PARAMS_BYTES, 8);
    }

    /**
     * Makes the next operation with {@code params} name {@code memory} as the registration of its bytes
     * ({@code UCP_OP_ATTR_FIELD_MEMH}: UCX skips its registration cache and, on InfiniBand and RoCE, uses the pinned
     * pages as they are); null names none.
     */
    public static void useMemory(MemorySegment params, UcpMemory memory) {
        int mask = params.get(java.lang.foreign.ValueLayout.JAVA_INT, 0);
        if (memory == null) {
            params.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, mask & ~UcpRequest.ATTR_MEMH);
            params.set(java.lang.foreign.ValueLayout.ADDRESS, UcpRequest.MEMH_OFFSET, MemorySegment.NULL);
        } else {
            params.set(java.lang.foreign.ValueLayout.ADDRESS, UcpRequest.MEMH_OFFSET, memory.handle);
            params.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, mask | UcpRequest.ATTR_MEMH);
        }
    }

    /**
     * Receives the message tagged exactly {@code tag} into the {@code length} bytes at {@code address}: 0 if it completed
     * at once, else the request. The bytes may be written until it completes or is cancelled and completed.
     *
     * @throws UcxException if UCX refused the receive
     */
    public long receive(long address, long length, long tag) {
        return receive(address, length, tag, params);
    }

    /**
     * Parameters for {@link #receive(long, long, long, MemorySegment)}: the receive always returns a request (never
     * completes at once: UCX 1.13 then leaves the length unreported when the message was there already), and
     * {@link #testReceive} writes the sender's tag and the length into {@code info} (16 bytes) once it completed.
     */
    public static MemorySegment receiveParams(Arena arena, MemorySegment info) {
        MemorySegment p = arena.allocate(UcpRequest.PARAMS_BYTES, 8);
        p.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, UcpRequest.ATTR_RECV_INFO | NO_IMMEDIATE_COMPLETION);
        p.set(java.lang.foreign.ValueLayout.ADDRESS, 56, info);
        return p;
    }

    /** As {@link #receive(long, long, long)}, with parameters from {@link #receiveParams}: the length comes into their info. */
    public long receive(long address, long length, long tag, MemorySegment receiveParams) {
        long st;
        try {
            st = (long) ucp.tagRecvNbxRaw.invokeExact(worker.handle, address, length, tag, -1L, receiveParams);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_tag_recv_nbx", e);
        }
        if (Ucp.isError(st)) ucp.check((byte) st, "ucp_tag_recv_nbx");
        return st;
    }

    /** A receive's status, its tag and length written to {@code info} once it completed (then free it). */
    public int testReceive(long request, MemorySegment info) {
        try {
            return (byte) ucp.tagRecvRequestTestRaw.invokeExact(request, info);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_tag_recv_request_test", e);
        }
    }

    /** A request's status: UCS_INPROGRESS (1), UCS_OK (0) or a negative error ({@link #statusText}). */
    public int status(long request) {
        try {
            return (byte) ucp.requestCheckStatusRaw.invokeExact(request);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_request_check_status", e);
        }
    }

    /** UCX's text for a status. */
    public String statusText(int status) {
        return ucp.statusText(status);
    }

    /** Asks UCX to end a pending request early (it then completes with "canceled" once the worker progresses). */
    public void cancel(long request) {
        try {
            ucp.requestCancel.invokeExact(worker.handle, request);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_request_cancel", e);
        }
    }

    /** Frees a request (a pending one completes without telling). */
    public void free(long request) {
        try {
            ucp.requestFreeRaw.invokeExact(request);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_request_free", e);
        }
    }
}
