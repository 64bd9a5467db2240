package io.hcomm4j.ucx;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The ordered byte stream of one endpoint (UCP's stream API), for a caller that keeps its own buffers: a send either
 * completes at once or returns its request as a number to poll ({@link #completed}) in order; received bytes are read
 * where UCX put them ({@code ucp_stream_recv_data_nb}) and handed back once consumed ({@link #release}). Nothing is
 * allocated per call. Sends may come from several threads (the worker is multi-threaded) but from one at a time per
 * stream; receives from one thread at a time.
 */
public final class UcpStream {
    private final UcpEndpoint ep;
    private final Ucp ucp;
    /** ucp_request_param_t, all zero: contiguous bytes, no callback (read only, shared by the sending threads). */
    private final MemorySegment sendParams;
    /** The length out-parameter of a receive (receiving thread only). */
    private final MemorySegment lengthOut;
    /** The length of the data {@link #receive} returned last. */
    private long received;

    UcpStream(UcpEndpoint ep, Arena arena) {
        this.ep = ep;
        this.ucp = ep.ucp();
        this.sendParams = arena.allocate(UcpRequest.PARAMS_BYTES, 8);
        this.lengthOut = arena.allocate(JAVA_LONG);
    }

    /**
     * Sends the {@code length} bytes at native address {@code address}; returns 0 if the send completed at once (the
     * bytes may be reused), else its request, whose bytes must stay untouched until {@link #completed} says so.
     *
     * @throws UcxException if UCX refused the send (the peer failed, the endpoint is closed)
     */
    public long send(long address, long length) {
        long st;
        try {
            st = (long) ucp.streamSendNbx.invokeExact(ep.handle, address, length, sendParams);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_stream_send_nbx", e);
        }
        if (Ucp.isError(st)) ucp.check((byte) st, "ucp_stream_send_nbx");
        return st;
    }

    /**
     * Whether the send {@code request} completed; a completed one is freed here and must not be asked again.
     *
     * @throws UcxException if it failed (freed too)
     */
    public boolean completed(long request) {
        int st;
        try {
            st = (byte) ucp.requestCheckStatusRaw.invokeExact(request);
            if (st == Ucp.UCS_INPROGRESS) return false;
            ucp.requestFreeRaw.invokeExact(request);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_request_check_status", e);
        }
        ucp.check(st, "ucp_stream_send_nbx");
        return true;
    }

    /** Frees a send request that is given up (the stream closes); UCX completes it without telling. */
    public void abandon(long request) {
        try {
            ucp.requestFreeRaw.invokeExact(request);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_request_free", e);
        }
    }

    /**
     * The address of bytes that came and were not yet received, {@link #receivedLength} of them, or 0 if none are
     * there. The bytes stay valid until {@link #release}.
     *
     * @throws UcxException if the stream failed
     */
    public long receive() {
        long st;
        try {
            st = (long) ucp.streamRecvDataNb.invokeExact(ep.handle, lengthOut);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_stream_recv_data_nb", e);
        }
        if (st == 0) return 0;
        if (Ucp.isError(st)) ucp.check((byte) st, "ucp_stream_recv_data_nb");
        received = lengthOut.get(JAVA_LONG, 0);
        return st;
    }

    /** How many bytes the last {@link #receive} returned. */
    public long receivedLength() {
        return received;
    }

    /** Hands back bytes {@link #receive} returned, once consumed. */
    public void release(long data) {
        try {
            ucp.streamDataRelease.invokeExact(ep.handle, data);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_stream_data_release", e);
        }
    }
}
