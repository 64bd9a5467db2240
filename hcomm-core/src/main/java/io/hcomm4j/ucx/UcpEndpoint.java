package io.hcomm4j.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A UCP endpoint ({@code ucp_ep_h}): a worker's connection to a peer worker's address, with or without UCX's peer
 * error handling (UCX 1.13's shared-memory transports refuse it: with {@code TLS=posix,cma} alone an endpoint that asks
 * for it is "Destination is unreachable").
 */
public final class UcpEndpoint implements AutoCloseable {
    static final AtomicInteger OPEN = new AtomicInteger();

    // ucp_ep_params_t as API 1.13 lays it out: field_mask, address, err_mode (+pad), err_handler {cb, arg}, user_data,
    // flags (+pad), sockaddr {addr, addrlen}, conn_request, name, local_sockaddr
    private static final long PARAMS_BYTES = 104;
    private static final long FIELD_REMOTE_ADDRESS = 1L, FIELD_ERR_HANDLING_MODE = 1L << 1, FIELD_ERR_HANDLER = 1L << 2;
    /** Endpoints with peer error handling, by the id UCX hands back to {@link #onError}. */
    private static final java.util.concurrent.ConcurrentHashMap<Long, UcpEndpoint> BY_ID = new java.util.concurrent.ConcurrentHashMap<>();
    private static final java.util.concurrent.atomic.AtomicLong IDS = new java.util.concurrent.atomic.AtomicLong();
    /** {@code void (*ucp_err_handler_cb_t)(void *arg, ucp_ep_h ep, ucs_status_t status)}, calling {@link #onError}. */
    private static final MemorySegment ERROR_HANDLER;

    static {
        try {
            java.lang.invoke.MethodHandle h = java.lang.invoke.MethodHandles.lookup().findStatic(UcpEndpoint.class, "onError",
                    java.lang.invoke.MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class, byte.class));
            ERROR_HANDLER = java.lang.foreign.Linker.nativeLinker().upcallStub(h,
                    java.lang.foreign.FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_BYTE), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
    private static final int ERR_HANDLING_MODE_PEER = 1;
    private static final int ATTR_FLAGS = 1 << 4;
    private static final int ATTR_DATATYPE = 1 << 3, ATTR_REPLY_BUFFER = 1 << 5;
    private static final int CLOSE_FLAG_FORCE = 1;

    private final UcpWorker worker;
    private final Ucp ucp;
    final MemorySegment handle;
    /**
     * The parameters of the RMA, atomic and flush calls, reused under this object's monitor (UCX reads them during the
     * call only): a shared arena per call cost its close, a handshake with every thread, 10-40 us here.
     */
    private final Arena opArena = Arena.ofShared();
    private final MemorySegment opParams = opArena.allocate(UcpRequest.PARAMS_BYTES, 8);
    private boolean closed;
    /** Its id in {@link #BY_ID} (0: no peer error handling). */
    private long id;
    /** UCX's error for this endpoint once the peer failed (0: none yet). */
    private volatile int failure;

    private UcpEndpoint(UcpWorker worker, MemorySegment handle) {
        this.worker = worker;
        this.ucp = worker.ucp();
        this.handle = handle;
    }

    Ucp ucp() {
        return ucp;
    }

    /**
     * Waits, progressing the worker, until what was sent on this endpoint has left this side (UCX's flush: handed to
     * the network, or to the peer's memory) or {@code timeoutNanos} passed; false on the timeout or a failed flush.
     */
    public boolean flush(long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        try (Arena a = Arena.ofShared()) {
            MemorySegment params = a.allocate(UcpRequest.PARAMS_BYTES, 8);
            MemorySegment st = (MemorySegment) ucp.epFlushNbx.invokeExact(handle, params);
            if (st.address() == 0) return true;
            if (Ucp.isError(st)) return false;
            try (UcpRequest r = new UcpRequest(ucp, false, Arena.ofShared(), MemorySegment.NULL, st, "ucp_ep_flush_nbx")) {
                while (!r.test()) {
                    if (System.nanoTime() - deadline > 0) return false;
                    if (worker.progress() == 0) Thread.onSpinWait();
                }
                return r.status() == Ucp.UCS_OK;
            }
        } catch (Throwable e) {
            throw Ucp.failed("ucp_ep_flush_nbx", e);
        }
    }

    static UcpEndpoint connect(UcpWorker worker, byte[] address, boolean peerErrors) {
        Ucp ucp = worker.ucp();
        long id = peerErrors ? IDS.incrementAndGet() : 0;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment params = a.allocate(PARAMS_BYTES, 8);
            params.set(JAVA_LONG, 0, FIELD_REMOTE_ADDRESS | FIELD_ERR_HANDLING_MODE | (peerErrors ? FIELD_ERR_HANDLER : 0));
            params.set(ADDRESS, 8, a.allocateFrom(JAVA_BYTE, address));
            params.set(JAVA_INT, 16, peerErrors ? ERR_HANDLING_MODE_PEER : 0);
            if (peerErrors) {
                params.set(ADDRESS, 24, ERROR_HANDLER);
                params.set(ADDRESS, 32, MemorySegment.ofAddress(id));
            }
            MemorySegment out = a.allocate(ADDRESS);
            ucp.check((byte) ucp.epCreate.invokeExact(worker.handle, params, out), "ucp_ep_create");
            OPEN.incrementAndGet();
            UcpEndpoint ep = new UcpEndpoint(worker, Ucp.out(out));
            if (peerErrors) {
                ep.id = id;
                BY_ID.put(id, ep);
            }
            return ep;
        } catch (Throwable e) {
            throw Ucp.failed("ucp_ep_create", e);
        }
    }

    /** UCX reports a failed peer (from inside the worker's progress; an upcall must not throw). */
    private static void onError(MemorySegment arg, MemorySegment ep, byte status) {
        try {
            UcpEndpoint e = BY_ID.get(arg.address());
            if (e != null) e.failure = status == 0 ? -1 : status;
        } catch (Throwable ignored) {
            // nothing may leave an upcall: the JVM would end
        }
    }

    /**
     * UCX's error status once it reported the peer failed (an endpoint with peer error handling; its operations fail
     * from then on), else 0.
     */
    public int failure() {
        return failure;
    }

    /** Sends {@code buf} with {@code tag} to the peer; the request completes when the buffer may be reused. */
    public UcpRequest sendTag(MemorySegment buf, long tag) {
        Arena a = Arena.ofShared();
        try {
            MemorySegment params = a.allocate(UcpRequest.PARAMS_BYTES, 8);
            MemorySegment st = (MemorySegment) ucp.tagSendNbx.invokeExact(handle, buf, buf.byteSize(), tag, params);
            return new UcpRequest(ucp, false, a, MemorySegment.NULL, st, "ucp_tag_send_nbx");
        } catch (Throwable e) {
            a.close();
            throw Ucp.failed("ucp_tag_send_nbx", e);
        }
    }

    /** The peer's registered memory through this endpoint, from the bytes its {@link UcpMemory#packKey} made. */
    public UcpRemoteKey unpackKey(byte[] packed) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            ucp.check((byte) ucp.epRkeyUnpack.invokeExact(handle, a.allocateFrom(JAVA_BYTE, packed), out), "ucp_ep_rkey_unpack");
            return new UcpRemoteKey(ucp, Ucp.out(out));
        } catch (Throwable e) {
            throw Ucp.failed("ucp_ep_rkey_unpack", e);
        }
    }

    /** Writes {@code src} to the peer's memory at {@code remoteAddress} (inside what {@code key} names). */
    public UcpRequest put(MemorySegment src, long remoteAddress, UcpRemoteKey key) {
        return rma(ucp.putNbx, "ucp_put_nbx", src, remoteAddress, key);
    }

    /** Reads the peer's memory at {@code remoteAddress} (inside what {@code key} names) into {@code dst}. */
    public UcpRequest get(MemorySegment dst, long remoteAddress, UcpRemoteKey key) {
        return rma(ucp.getNbx, "ucp_get_nbx", dst, remoteAddress, key);
    }

    /**
     * {@code ucp_put_nbx} or {@code ucp_get_nbx} (the same signature) on {@code buf}. RMA and atomics come from any
     * thread while the poller may close the endpoint: both hold this object's monitor, so none reaches a closed one.
     */
    private synchronized UcpRequest rma(java.lang.invoke.MethodHandle call, String name, MemorySegment buf, long remoteAddress, UcpRemoteKey key) {
        checkOpen(name);
        try {
            opParams.fill((byte) 0);
            MemorySegment st = (MemorySegment) call.invokeExact(handle, buf, buf.byteSize(), remoteAddress, key.handle, opParams);
            return new UcpRequest(ucp, false, null, MemorySegment.NULL, st, name);
        } catch (Throwable e) {
            throw Ucp.failed(name, e);
        }
    }

    /** UCP's 64-bit atomic operations ({@code ucp_atomic_op_t}, in its order). */
    public enum AtomicOp {
        /** old = *remote; *remote += operand. */
        ADD,
        /** old = *remote; *remote = operand. */
        SWAP,
        /** old = *remote; if (old == operand) *remote = swap. */
        CSWAP,
        /** old = *remote; *remote &amp;= operand. */
        AND,
        /** old = *remote; *remote |= operand. */
        OR,
        /** old = *remote; *remote ^= operand. */
        XOR
    }

    /**
     * A 64-bit atomic {@code op} on the peer's word at {@code remoteAddress} (8-byte aligned, inside what {@code key}
     * names); the old value lands in {@code reply} (8 bytes; for {@link AtomicOp#CSWAP} it holds the value to swap in
     * on entry). {@code reply} must stay alive until the request completes.
     */
    public UcpRequest atomic(AtomicOp op, long operand, long swap, long remoteAddress, UcpRemoteKey key, MemorySegment reply) {
        return atomic(op, 8, operand, swap, remoteAddress, key, reply);
    }

    /**
     * {@link #atomic(AtomicOp, long, long, long, UcpRemoteKey, MemorySegment)} on a word of {@code bytes} (4 or 8):
     * the operands are truncated to it, and {@code reply} holds that many bytes.
     */
    public synchronized UcpRequest atomic(AtomicOp op, int bytes, long operand, long swap, long remoteAddress, UcpRemoteKey key,
                                          MemorySegment reply) {
        if (bytes != 4 && bytes != 8) throw new IllegalArgumentException("bytes: UCX atomics are 4 or 8 bytes wide, not " + bytes);
        checkOpen("ucp_atomic_op_nbx");
        try {
            MemorySegment params = opParams;
            params.fill((byte) 0);
            params.set(JAVA_INT, 0, ATTR_DATATYPE | ATTR_REPLY_BUFFER);
            params.set(JAVA_LONG, 24, (long) bytes << 3); // ucp_dt_make_contig(bytes)
            params.set(ADDRESS, 40, reply);
            MemorySegment x = Arena.ofAuto().allocate(JAVA_LONG); // the operand lives as long as its request
            if (bytes == 8) x.set(JAVA_LONG, 0, operand);
            else x.set(JAVA_INT, 0, (int) operand);
            if (op == AtomicOp.CSWAP) {
                if (bytes == 8) reply.set(JAVA_LONG, 0, swap);
                else reply.set(JAVA_INT, 0, (int) swap);
            }
            MemorySegment st = (MemorySegment) ucp.atomicOpNbx.invokeExact(handle, op.ordinal(), x, 1L, remoteAddress, key.handle, params);
            UcpRequest r = new UcpRequest(ucp, false, null, MemorySegment.NULL, st, "ucp_atomic_op_nbx");
            r.keep(x);
            return r;
        } catch (Throwable e) {
            throw Ucp.failed("ucp_atomic_op_nbx", e);
        }
    }

    /**
     * UCX's description of this endpoint ({@code ucp_ep_print_info}): its lanes, the transport of each and what it is
     * used for, and the protocols chosen per message size.
     */
    public synchronized String describe() {
        checkOpen("ucp_ep_print_info");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bufOut = a.allocate(ADDRESS), sizeOut = a.allocate(JAVA_LONG);
            MemorySegment file = (MemorySegment) ucp.openMemstream.invokeExact(bufOut, sizeOut);
            if (file.address() == 0) throw new UcxException("open_memstream failed");
            ucp.epPrintInfo.invokeExact(handle, file);
            int closed = (int) ucp.fclose.invokeExact(file);
            MemorySegment buf = Ucp.out(bufOut);
            try {
                return closed != 0 ? "" : buf.reinterpret(Ucp.outLong(sizeOut) + 1).getString(0); // open_memstream ends it with a NUL
            } finally {
                ucp.free.invokeExact(buf);
            }
        } catch (Throwable e) {
            throw Ucp.failed("ucp_ep_print_info", e);
        }
    }

    /**
     * What UCX does natively on this endpoint, read once from {@link #describe}: {@code rma} if it puts and gets to
     * this peer through a lane with RDMA, shared memory or CMA (the endpoint has put and get protocols), {@code atomics}
     * if it has an atomic lane. Either false means UCX would emulate those ops with messages that the peer's worker
     * applies (TCP alone).
     */
    public record NativeAccess(boolean rma, boolean atomics) {
    }

    /** See {@link NativeAccess}; meaningful once the wire-up ended (a completed {@link #flushRequest}). */
    public NativeAccess nativeAccess() {
        String d = describe();
        return new NativeAccess(d.contains(" put[") || d.contains(" rma#"), d.contains(" amo#"));
    }

    /**
     * Starts a flush of this endpoint: its request completes when every RMA and atomic operation started on it before
     * has completed at the peer ({@code ucp_ep_flush_nbx}).
     */
    public synchronized UcpRequest flushRequest() {
        checkOpen("ucp_ep_flush_nbx");
        try {
            opParams.fill((byte) 0);
            MemorySegment st = (MemorySegment) ucp.epFlushNbx.invokeExact(handle, opParams);
            return new UcpRequest(ucp, false, null, MemorySegment.NULL, st, "ucp_ep_flush_nbx");
        } catch (Throwable e) {
            throw Ucp.failed("ucp_ep_flush_nbx", e);
        }
    }

    private void checkOpen(String call) {
        if (closed) throw new UcxException(call + ": the endpoint is closed (its peer failed or the link was closed)");
    }

    /** Closes the endpoint at once (pending operations on it fail), progressing its worker until UCX is done. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try (Arena a = Arena.ofShared()) {
            MemorySegment params = a.allocate(UcpRequest.PARAMS_BYTES, 8);
            params.set(JAVA_INT, 0, ATTR_FLAGS);
            params.set(JAVA_INT, 4, CLOSE_FLAG_FORCE);
            MemorySegment st = (MemorySegment) ucp.epCloseNbx.invokeExact(handle, params);
            if (st.address() != 0 && !Ucp.isError(st)) {
                try (UcpRequest r = new UcpRequest(ucp, false, Arena.ofShared(), MemorySegment.NULL, st, "ucp_ep_close_nbx")) {
                    while (!r.test()) worker.progress();
                }
            }
        } catch (Throwable e) {
            throw Ucp.failed("ucp_ep_close_nbx", e);
        } finally {
            OPEN.decrementAndGet();
            if (id != 0) BY_ID.remove(id);
            opArena.close();
        }
    }
}
