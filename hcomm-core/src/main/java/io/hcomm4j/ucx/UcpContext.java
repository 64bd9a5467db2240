package io.hcomm4j.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A UCP context ({@code ucp_context_h}): the transports UCX may use and the features asked of them (tag matching,
 * remote memory access, 32- and 64-bit atomics, wake-up on an event descriptor). Settings that UCX reads from {@code UCX_*}
 * environment variables can be given here too (name without the prefix: {@code "TLS" -> "tcp"}); the environment
 * still applies to the rest.
 */
public final class UcpContext implements AutoCloseable {
    /** Contexts open in this JVM, and workers: none may stay behind a closed transport. */
    static final AtomicInteger OPEN = new AtomicInteger();

    // ucp_params_t as API 1.13 lays it out: field_mask, features, request_size, request_init, request_cleanup,
    // tag_sender_mask, mt_workers_shared, estimated_num_eps, estimated_num_ppn, name
    private static final long PARAMS_BYTES = 80;
    private static final long FIELD_FEATURES = 1L;
    private static final long FIELD_MT_WORKERS_SHARED = 1L << 5;
    private static final long FEATURE_TAG = 1L, FEATURE_RMA = 1L << 1, FEATURE_AMO32 = 1L << 2, FEATURE_AMO64 = 1L << 3,
            FEATURE_WAKEUP = 1L << 4;

    final Ucp ucp;
    final MemorySegment handle;
    private boolean closed;

    private UcpContext(Ucp ucp, MemorySegment handle) {
        this.ucp = ucp;
        this.handle = handle;
    }

    /**
     * A context with tag matching, RMA, 32- and 64-bit atomics and wake-up, and {@code settings} over the environment's.
     *
     * @throws UcxException if UCX is missing or refuses a setting or the context
     */
    public static UcpContext open(Map<String, String> settings) {
        Ucp ucp = Ucp.get();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment configOut = a.allocate(ADDRESS);
            ucp.check((byte) ucp.configRead.invokeExact(MemorySegment.NULL, MemorySegment.NULL, configOut), "ucp_config_read");
            MemorySegment config = Ucp.out(configOut);
            MemorySegment contextOut = a.allocate(ADDRESS);
            try {
                for (Map.Entry<String, String> e : settings.entrySet()) {
                    int st = (byte) ucp.configModify.invokeExact(config, a.allocateFrom(e.getKey()), a.allocateFrom(e.getValue()));
                    if (st != Ucp.UCS_OK) {
                        throw new UcxException("UCX refused the setting UCX_" + e.getKey() + "=" + e.getValue() + ": " + ucp.statusText(st));
                    }
                }
                MemorySegment params = a.allocate(PARAMS_BYTES, 8);
                params.set(JAVA_LONG, 0, FIELD_FEATURES | FIELD_MT_WORKERS_SHARED);
                params.set(JAVA_LONG, 8, FEATURE_TAG | FEATURE_RMA | FEATURE_AMO32 | FEATURE_AMO64 | FEATURE_WAKEUP);
                params.set(java.lang.foreign.ValueLayout.JAVA_INT, 48, 1); // workers may be used by several threads
                int st = (byte) ucp.initVersion.invokeExact(1, Ucp.MIN_MINOR, params, config, contextOut);
                ucp.check(st, "ucp_init (UCX " + ucp.version() + ", settings " + settings + ")");
            } finally {
                ucp.configRelease.invokeExact(config);
            }
            OPEN.incrementAndGet();
            return new UcpContext(ucp, Ucp.out(contextOut));
        } catch (Throwable e) {
            throw Ucp.failed("ucp_init", e);
        }
    }

    /** A worker of this context (its progress engine and address), safe to use from several threads. */
    public UcpWorker newWorker() {
        return UcpWorker.create(this);
    }

    /**
     * Registers {@code segment} (native memory the caller owns and keeps alive until {@link UcpMemory#close}) for peers'
     * put, get and atomics.
     */
    public UcpMemory map(MemorySegment segment) {
        return UcpMemory.map(this, segment);
    }

    /** Releases the context (its workers must be closed first). Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try {
            ucp.cleanup.invokeExact(handle);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_cleanup", e);
        } finally {
            OPEN.decrementAndGet();
        }
    }

    /** Contexts, workers, endpoints, registrations and remote keys open in this JVM (for tests and leak checks). */
    public static int openHandles() {
        return OPEN.get() + UcpWorker.OPEN.get() + UcpEndpoint.OPEN.get() + UcpMemory.OPEN.get() + UcpRemoteKey.OPEN.get();
    }
}
