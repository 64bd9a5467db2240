package io.hcomm4j.transport;

import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.ucx.UcpContext;
import io.hcomm4j.ucx.UcpMemory;
import io.hcomm4j.ucx.UcxException;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The memory pool's mappings registered with UCX ahead of use ({@code ucp_mem_map} when the pool maps them,
 * {@code ucp_mem_unmap} before it unmaps them): a large message from or into a pool buffer names its registration
 * ({@link #holding}), so UCX neither looks it up in its registration cache nor, on InfiniBand and RoCE, pins the pages
 * on first use. Memory outside the pool is registered by UCX itself when first used.
 */
final class UcxRegistrations implements MemoryPool.MappingListener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(UcxRegistrations.class);

    private final int rank;
    private final UcpContext context;
    /** By address (guarded by itself). */
    private final TreeMap<Long, UcpMemory> byAddress = new TreeMap<>();
    private boolean closed;
    private boolean warned;

    UcxRegistrations(int rank, UcpContext context) {
        this.rank = rank;
        this.context = context;
    }

    @Override
    public void mapped(MemorySegment mapping) {
        UcpMemory m;
        try {
            m = context.map(mapping);
        } catch (UcxException e) {
            synchronized (byAddress) {
                if (!warned) LOG.warn("rank {}: UCX cannot register the memory pool's {} bytes ahead of use ({}); UCX registers "
                        + "buffers on first use instead (see ulimit -l)", rank, mapping.byteSize(), e.getMessage());
                warned = true;
            }
            return;
        }
        synchronized (byAddress) {
            if (!closed) {
                byAddress.put(mapping.address(), m);
                return;
            }
        }
        m.close();
    }

    @Override
    public void unmapping(MemorySegment mapping) {
        UcpMemory m;
        synchronized (byAddress) {
            m = byAddress.remove(mapping.address());
        }
        if (m != null) m.close();
    }

    /** The registration that holds {@code [address, address + length)}, or null. */
    UcpMemory holding(long address, long length) {
        synchronized (byAddress) {
            Map.Entry<Long, UcpMemory> e = byAddress.floorEntry(address);
            if (e == null) return null;
            MemorySegment s = e.getValue().segment();
            return address + length <= s.address() + s.byteSize() ? e.getValue() : null;
        }
    }

    /** How many mappings are registered now. */
    int count() {
        synchronized (byAddress) {
            return byAddress.size();
        }
    }

    /** Unregisters everything (before the worker and the context close); later mappings are not registered. */
    @Override
    public void close() {
        UcpMemory[] all;
        synchronized (byAddress) {
            closed = true;
            all = byAddress.values().toArray(UcpMemory[]::new);
            byAddress.clear();
        }
        for (UcpMemory m : all) m.close();
    }
}
