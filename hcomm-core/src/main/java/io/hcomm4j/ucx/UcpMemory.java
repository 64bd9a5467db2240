package io.hcomm4j.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Memory registered with UCX ({@code ucp_mem_map} of memory we own; {@code ucp_mem_h}): what peers put into, get from
 * and update atomically through the remote key this side packs ({@link #packKey}) and they unpack
 * ({@link UcpEndpoint#unpackKey}). On InfiniBand and RoCE the pages are pinned and known to the NIC from here on.
 */
public final class UcpMemory implements AutoCloseable {
    static final AtomicInteger OPEN = new AtomicInteger();

    // ucp_mem_map_params_t as API 1.13 lays it out: field_mask, address, length, flags (u32), prot (u32), memory_type
    private static final long PARAMS_BYTES = 40;
    private static final long FIELD_ADDRESS = 1L, FIELD_LENGTH = 1L << 1;

    private final UcpContext context;
    final MemorySegment handle;
    private final MemorySegment segment;
    private boolean closed;

    private UcpMemory(UcpContext context, MemorySegment handle, MemorySegment segment) {
        this.context = context;
        this.handle = handle;
        this.segment = segment;
    }

    static UcpMemory map(UcpContext context, MemorySegment segment) {
        if (!segment.isNative() || segment.byteSize() == 0) {
            throw new IllegalArgumentException("segment: UCX registers native memory of at least one byte, not " + segment);
        }
        Ucp ucp = context.ucp;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment params = a.allocate(PARAMS_BYTES, 8);
            params.set(JAVA_LONG, 0, FIELD_ADDRESS | FIELD_LENGTH);
            params.set(ADDRESS, 8, segment);
            params.set(JAVA_LONG, 16, segment.byteSize());
            MemorySegment out = a.allocate(ADDRESS);
            ucp.check((byte) ucp.memMap.invokeExact(context.handle, params, out), "ucp_mem_map (" + segment.byteSize() + " bytes)");
            OPEN.incrementAndGet();
            return new UcpMemory(context, Ucp.out(out), segment);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_mem_map", e);
        }
    }

    /** The registered memory. */
    public MemorySegment segment() {
        return segment;
    }

    /** The remote key of this memory, packed for a peer ({@link UcpEndpoint#unpackKey} there). */
    public byte[] packKey() {
        Ucp ucp = context.ucp;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bufOut = a.allocate(ADDRESS), sizeOut = a.allocate(JAVA_LONG);
            ucp.check((byte) ucp.rkeyPack.invokeExact(context.handle, handle, bufOut, sizeOut), "ucp_rkey_pack");
            MemorySegment buf = Ucp.out(bufOut);
            try {
                return buf.reinterpret(Ucp.outLong(sizeOut)).toArray(JAVA_BYTE);
            } finally {
                ucp.rkeyBufferRelease.invokeExact(buf);
            }
        } catch (Throwable e) {
            throw Ucp.failed("ucp_rkey_pack", e);
        }
    }

    /** Unregisters the memory (peers' keys to it stop working; the memory itself stays the caller's). Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try {
            context.ucp.check((byte) context.ucp.memUnmap.invokeExact(context.handle, handle), "ucp_mem_unmap");
        } catch (Throwable e) {
            throw Ucp.failed("ucp_mem_unmap", e);
        } finally {
            OPEN.decrementAndGet();
        }
    }
}
