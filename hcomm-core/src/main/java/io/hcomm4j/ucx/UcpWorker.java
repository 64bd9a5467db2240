package io.hcomm4j.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A UCP worker ({@code ucp_worker_h}): where a rank's endpoints, requests and progress live, and the address peers
 * connect to (exchanged through the store).
 */
public final class UcpWorker implements AutoCloseable {
    static final AtomicInteger OPEN = new AtomicInteger();

    // ucp_worker_params_t as API 1.13 lays it out: field_mask, thread_mode, cpu_mask (128 bytes), events, user_data,
    // event_fd, flags, name, am_alignment, client_id
    private static final long PARAMS_BYTES = 200;
    private static final long FIELD_THREAD_MODE = 1L;
    private static final int THREAD_MODE_MULTI = 2;

    private final UcpContext context;
    final MemorySegment handle;
    /** The tag operations' preallocated parameters; freed at close. */
    private final Arena arena = Arena.ofShared();
    private UcpTags tags;
    private boolean closed;

    private UcpWorker(UcpContext context, MemorySegment handle) {
        this.context = context;
        this.handle = handle;
    }

    static UcpWorker create(UcpContext context) {
        Ucp ucp = context.ucp;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment params = a.allocate(PARAMS_BYTES, 8);
            params.set(JAVA_LONG, 0, FIELD_THREAD_MODE);
            params.set(JAVA_INT, 8, THREAD_MODE_MULTI);
            MemorySegment out = a.allocate(ADDRESS);
            ucp.check((byte) ucp.workerCreate.invokeExact(context.handle, params, out), "ucp_worker_create");
            OPEN.incrementAndGet();
            return new UcpWorker(context, Ucp.out(out));
        } catch (Throwable e) {
            throw Ucp.failed("ucp_worker_create", e);
        }
    }

    /** Tag sends and receives by address, without allocation per call (the same object each call). */
    public synchronized UcpTags tags() {
        if (tags == null) tags = new UcpTags(this, arena);
        return tags;
    }

    /** This worker's address, for peers to connect to (an opaque byte string, a few dozen bytes). */
    public byte[] address() {
        Ucp ucp = context.ucp;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment addrOut = a.allocate(ADDRESS), lengthOut = a.allocate(JAVA_LONG);
            ucp.check((byte) ucp.workerGetAddress.invokeExact(handle, addrOut, lengthOut), "ucp_worker_get_address");
            MemorySegment addr = Ucp.out(addrOut);
            try {
                return addr.reinterpret(Ucp.outLong(lengthOut)).toArray(JAVA_BYTE);
            } finally {
                ucp.workerReleaseAddress.invokeExact(handle, addr);
            }
        } catch (Throwable e) {
            throw Ucp.failed("ucp_worker_get_address", e);
        }
    }

    /**
     * An endpoint to the worker whose {@link #address} is {@code address}; {@code peerErrors}: UCX's peer error handling
     * (a failed peer fails the endpoint's operations), which needs a transport that supports it (TCP does; UCX 1.13's
     * shared-memory transports do not).
     */
    public UcpEndpoint connect(byte[] address, boolean peerErrors) {
        return UcpEndpoint.connect(this, address, peerErrors);
    }

    /**
     * An endpoint with peer error handling if UCX's transports to that peer allow it, without otherwise (UCX 1.13's
     * shared memory); the refused first attempt is not logged by UCX.
     */
    public UcpEndpoint connectWithPeerErrorsIfPossible(byte[] address) {
        try {
            return context.ucp.quietly(() -> UcpEndpoint.connect(this, address, true));
        } catch (UcxException e) {
            return UcpEndpoint.connect(this, address, false);
        }
    }

    /**
     * Receives a message whose tag matches {@code tag} in the bits of {@code mask} into {@code buf} (a longer message
     * fails the request with "Message truncated").
     */
    public UcpRequest recvTag(MemorySegment buf, long tag, long mask) {
        Ucp ucp = context.ucp;
        Arena a = Arena.ofShared();
        try {
            MemorySegment info = a.allocate(UcpRequest.INFO_BYTES, 8);
            MemorySegment params = a.allocate(UcpRequest.PARAMS_BYTES, 8);
            // never complete at once: UCX 1.13 may then leave recv_info unwritten; ucp_tag_recv_request_test fills it
            params.set(JAVA_INT, 0, UcpRequest.ATTR_RECV_INFO | (1 << 16));
            params.set(ADDRESS, 56, info);
            MemorySegment st = (MemorySegment) ucp.tagRecvNbx.invokeExact(handle, buf, buf.byteSize(), tag, mask, params);
            return new UcpRequest(ucp, true, a, info, st, "ucp_tag_recv_nbx");
        } catch (Throwable e) {
            a.close();
            throw Ucp.failed("ucp_tag_recv_nbx", e);
        }
    }

    /** UCX's own text for a {@code ucs_status_t} (a request's {@link UcpRequest#status}). */
    public String statusText(int status) {
        return context.ucp.statusText(status);
    }

    Ucp ucp() {
        return context.ucp;
    }

    /** Makes progress on this worker's communication; returns how many events it handled (0: none was pending). */
    public int progress() {
        try {
            return (int) context.ucp.workerProgress.invokeExact(handle);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_worker_progress", e);
        }
    }

    /**
     * Waits until this worker has something to do or {@code timeoutMillis} passed, whichever comes first, without
     * spinning: drains what is pending ({@link #progress} until it finds nothing), arms the worker's event descriptor
     * ({@code ucp_worker_arm}) and blocks in {@code poll(2)} on it. Returns true if an event came (a message, a
     * completion, a {@link #signal}; or the wait was interrupted), false if the time ran out; the caller then
     * progresses the worker. One thread at a time waits on a worker.
     */
    public boolean waitForEvents(int timeoutMillis) {
        while (progress() > 0) {
            // drain: the descriptor signals new events only
        }
        if (!arm()) return true; // events came meanwhile: nothing to wait for
        return awaitEventFd(timeoutMillis);
    }

    /**
     * Arms the event descriptor ({@code ucp_worker_arm}) for a thread that will {@link #awaitEventFd} while another
     * progresses the worker: false if events are pending (progress it instead of waiting).
     */
    public boolean arm() {
        Ucp ucp = context.ucp;
        try {
            int st = (byte) ucp.workerArm.invokeExact(handle);
            if (st == Ucp.UCS_ERR_BUSY) return false;
            ucp.check(st, "ucp_worker_arm");
            return true;
        } catch (Throwable e) {
            throw Ucp.failed("ucp_worker_arm", e);
        }
    }

    /**
     * Blocks in {@code poll(2)} on the worker's event descriptor (armed by {@link #arm}) until it signals or
     * {@code timeoutMillis} passed; true if it signalled (or the wait was interrupted).
     */
    public boolean awaitEventFd(int timeoutMillis) {
        Ucp ucp = context.ucp;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment fdOut = a.allocate(JAVA_INT);
            ucp.check((byte) ucp.workerGetEfd.invokeExact(handle, fdOut), "ucp_worker_get_efd");
            MemorySegment pfd = a.allocate(8, 4); // struct pollfd {int fd; short events; short revents}
            pfd.set(JAVA_INT, 0, fdOut.get(JAVA_INT, 0));
            pfd.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 4, (short) 1); // POLLIN
            return (int) ucp.poll.invokeExact(pfd, 1L, timeoutMillis) != 0;
        } catch (Throwable e) {
            throw Ucp.failed("waiting on the worker's event descriptor", e);
        }
    }

    /** Wakes a thread in {@link #waitForEvents} or {@link #awaitEventFd} on this worker (from any thread). */
    public void signal() {
        Ucp ucp = context.ucp;
        try {
            ucp.check((byte) ucp.workerSignal.invokeExact(handle), "ucp_worker_signal");
        } catch (Throwable e) {
            throw Ucp.failed("ucp_worker_signal", e);
        }
    }

    /** Destroys the worker. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try {
            // messages that came after their receives were cancelled (a peer's last frames as both sides close) are
            // still queued as unexpected; UCX warns of each as it frees it: expected here, so it says nothing
            context.ucp.quietly(() -> {
                try {
                    context.ucp.workerDestroy.invokeExact(handle);
                    return null;
                } catch (Throwable e) {
                    throw Ucp.failed("ucp_worker_destroy", e);
                }
            });
        } finally {
            OPEN.decrementAndGet();
            arena.close();
        }
    }
}
