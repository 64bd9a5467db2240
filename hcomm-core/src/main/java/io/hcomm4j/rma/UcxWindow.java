package io.hcomm4j.rma;

import io.hcomm4j.DataType;
import io.hcomm4j.HcommException;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.UcxRemoteAccess;
import io.hcomm4j.ucx.UcpEndpoint;
import io.hcomm4j.ucx.UcpMemory;
import io.hcomm4j.ucx.UcpRemoteKey;
import io.hcomm4j.ucx.UcpRequest;
import io.hcomm4j.ucx.UcxException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A window's UCX side ({@code HCOMM_TRANSPORT=ucx}): this rank's block registered with UCX ({@code ucp_mem_map}), and
 * for each member whose pair talks UCX with native RMA or atomics (RDMA, shared memory, CMA: not TCP alone, where UCX
 * would emulate them with messages, slower than the frames) its endpoint, its remote key and the address of its block. Puts, gets and the
 * atomics UCX has (fetch-and-add, swap, compare-and-swap, and, or, xor on 4- and 8-byte words) go straight into the
 * target's memory — RDMA on InfiniBand and RoCE; over TCP UCX's own messages, which the target's worker applies —
 * without the target's progress engine taking part. A flush is UCX's endpoint flush.
 *
 * <pre>
 * descriptor tail (after WindowMemory's 56 bytes): i64 block address, i32 packed key bytes (0: not registered), the key
 *                                                   (padded to the longest member's)
 * </pre>
 */
final class UcxWindow implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(UcxWindow.class);
    private static final int TAIL_HEADER = 12;

    private final UcxRemoteAccess ucx;
    private final PeerTransport transport;
    private final int rank;
    private final int[] world;
    private final long timeoutNanos;
    /** This rank's registered block, or null. */
    private final UcpMemory registered;
    /** Per member: its endpoint, or null (reached otherwise). */
    private final UcpEndpoint[] eps;
    private final UcpRemoteKey[] keys;
    private final long[] bases;
    /** Per member: UCX puts and gets natively (else its RMA would be messages: the frames are faster). */
    private final boolean[] rma;
    /** Per member: UCX has native atomics to it. */
    private final boolean[] atomics;
    /** Per member: a put or atomic went there since the last flush. */
    private final boolean[] written;

    private UcxWindow(UcxRemoteAccess ucx, PeerTransport transport, int rank, int[] world, long timeoutNanos, UcpMemory registered, int n) {
        this.ucx = ucx;
        this.transport = transport;
        this.rank = rank;
        this.world = world;
        this.timeoutNanos = timeoutNanos;
        this.registered = registered;
        this.eps = new UcpEndpoint[n];
        this.keys = new UcpRemoteKey[n];
        this.bases = new long[n];
        this.written = new boolean[n];
        this.rma = new boolean[n];
        this.atomics = new boolean[n];
    }

    /** This rank's block registered with UCX, or null (empty, or UCX refused: the others then reach it by messages). */
    static UcpMemory register(UcxRemoteAccess ucx, MemorySegment block, int rank) {
        if (block.byteSize() == 0) return null;
        try {
            UcpMemory m = ucx.map(block);
            ucx.keep(m);
            return m;
        } catch (UcxException e) {
            LOG.warn("rank {}: UCX cannot register the window's {} bytes ({}); the others reach them through this rank's "
                    + "progress engine", rank, block.byteSize(), e.getMessage());
            return null;
        }
    }

    /**
     * Collective over {@code group}: {@code descriptor} followed by this rank's tail, the block's address and the packed
     * key of {@code registered} (none if it is null), padded to the longest key of the members (all-gathered here).
     */
    static byte[] describe(WindowGroup group, byte[] descriptor, MemorySegment block, UcpMemory registered) {
        byte[] key = registered == null ? new byte[0] : registered.packKey();
        int longest = 0;
        for (byte[] k : group.allGather(ByteBuffer.allocate(4).putInt(key.length).array())) {
            longest = Math.max(longest, ByteBuffer.wrap(k).getInt());
        }
        ByteBuffer b = ByteBuffer.allocate(descriptor.length + TAIL_HEADER + longest).order(ByteOrder.LITTLE_ENDIAN);
        b.put(descriptor).putLong(block.address()).putInt(key.length).put(key);
        return b.array();
    }

    /**
     * Connects to every member {@code direct} does not reach, from the descriptors all members sent ({@link #describe},
     * {@code at} bytes into each); a member whose pair does not talk UCX, or whose block is not registered, is left to
     * the progress engine's messages.
     */
    static UcxWindow connect(UcxRemoteAccess ucx, WindowGroup group, UcpMemory registered, byte[][] all, int at,
                             MemorySegment[] direct) {
        int n = all.length;
        int[] world = new int[n];
        for (int r = 0; r < n; r++) world[r] = group.worldRank(r);
        UcxWindow w = new UcxWindow(ucx, group.transport(), group.rank(), world, group.timeoutNanos(), registered, n);
        long deadline = System.nanoTime() + group.timeoutNanos();
        try {
            for (int r = 0; r < n; r++) {
                if (r == group.rank() || direct[r] != null) continue;
                ByteBuffer d = ByteBuffer.wrap(all[r], at, all[r].length - at).order(ByteOrder.LITTLE_ENDIAN);
                long base = d.getLong();
                byte[] key = new byte[d.getInt()];
                d.get(key);
                if (key.length == 0) continue;
                UcpEndpoint ep = ucx.endpoint(world[r], deadline);
                if (ep == null) continue;
                try {
                    // UCX connects a new endpoint on a first lane and moves it to its final lanes as the wire-up ends;
                    // a flush waits for that, so the lanes described below are the ones the ops will take
                    w.watch(r, ep.flushRequest(), "UCX wire-up with rank " + r, null, null).await();
                    UcpEndpoint.NativeAccess access = ep.nativeAccess();
                    if (!access.rma() && !access.atomics()) continue; // UCX would send messages (TCP alone): the frames do that faster
                    UcpRemoteKey k = ep.unpackKey(key);
                    w.rma[r] = access.rma();
                    w.atomics[r] = access.atomics();
                    ucx.keep(k);
                    w.keys[r] = k;
                    w.eps[r] = ep;
                    w.bases[r] = base;
                } catch (UcxException e) {
                    LOG.warn("rank {}: UCX cannot reach rank {}'s window block ({}); reaching it through its progress engine",
                            group.rank(), r, e.getMessage());
                }
            }
            return w;
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
    }

    /** True if member {@code t}'s block is reached through UCX's puts and gets. */
    boolean reaches(int t) {
        return eps[t] != null && rma[t];
    }

    /** True if UCX's atomics reach member {@code t}'s block. */
    boolean atomicsReach(int t) {
        return eps[t] != null && atomics[t];
    }

    /** True if a put or atomic went to {@code t} since its last {@link #flush}. */
    boolean written(int t) {
        return written[t];
    }

    /** A put of native {@code origin} into {@code t}'s block at {@code offset}: complete when {@code origin} may be reused. */
    RmaFuture<Void> put(int t, MemorySegment origin, long offset) {
        String what = "put to rank " + t + " at offset " + offset;
        if (origin.byteSize() == 0) return RmaFuture.completedVoid();
        UcpRequest r = start(t, what, () -> eps[t].put(origin, bases[t] + offset, keys[t]));
        written[t] = true;
        return watch(t, r, what, null, null);
    }

    /**
     * A get of {@code t}'s block at {@code offset} into native {@code result}, after this rank's earlier writes to
     * {@code t} are complete (UCX does not order a get behind the puts before it; the frames' road does).
     */
    RmaFuture<Void> get(int t, MemorySegment result, long offset) {
        String what = "get from rank " + t + " at offset " + offset;
        if (result.byteSize() == 0) return RmaFuture.completedVoid();
        flush(t);
        return watch(t, start(t, what, () -> eps[t].get(result, bases[t] + offset, keys[t])), what, null, null);
    }

    /** UCX's atomic for {@code op}, or null if it has none (MIN, MAX, PROD: the target's progress engine applies those). */
    static UcpEndpoint.AtomicOp atomicOf(ReduceOp op) {
        return switch (op) {
            case SUM, NO_OP -> UcpEndpoint.AtomicOp.ADD; // NO_OP: a fetch, as adding 0
            case REPLACE -> UcpEndpoint.AtomicOp.SWAP;
            case BAND -> UcpEndpoint.AtomicOp.AND;
            case BOR -> UcpEndpoint.AtomicOp.OR;
            case BXOR -> UcpEndpoint.AtomicOp.XOR;
            default -> null;
        };
    }

    /** A fetch-and-op ({@link #atomicOf} not null) on the 4- or 8-byte word at {@code offset}: the old value, signed. */
    RmaFuture<Long> fetchAndOp(int t, long operand, long offset, DataType type, ReduceOp op) {
        String what = "fetchAndOp at rank " + t + " at offset " + offset;
        UcpEndpoint.AtomicOp a = atomicOf(op);
        return atomic(t, what, a, type, op == ReduceOp.NO_OP ? 0 : operand, 0, offset);
    }

    /** A compare-and-swap on the 4- or 8-byte word at {@code offset}: the old value, signed. */
    RmaFuture<Long> compareAndSwap(int t, long expected, long desired, long offset, DataType type) {
        return atomic(t, "compareAndSwap at rank " + t + " at offset " + offset, UcpEndpoint.AtomicOp.CSWAP, type, expected, desired, offset);
    }

    private RmaFuture<Long> atomic(int t, String what, UcpEndpoint.AtomicOp op, DataType type, long operand, long swap, long offset) {
        int bytes = type.byteSize();
        MemorySegment reply = Arena.ofAuto().allocate(8, 8); // alive while the completion below holds it
        UcpRequest r = start(t, what, () -> eps[t].atomic(op, bytes, operand, swap, bases[t] + offset, keys[t], reply));
        written[t] = true;
        return watch(t, r, what, reply, type);
    }

    /**
     * Waits until every put and atomic that went to {@code t} is complete in its memory (UCX's endpoint flush); nothing
     * to do when none went there since the last flush.
     */
    void flush(int t) {
        if (eps[t] == null) return;
        if (!written[t]) return;
        String what = "flush of rank " + t;
        RmaFuture<Void> f = watch(t, start(t, what, () -> eps[t].flushRequest()), what, null, null);
        written[t] = false;
        f.await();
    }

    /** Starts a UCX call on {@code t}'s endpoint; a closed endpoint (its peer failed) is that peer's failure. */
    private UcpRequest start(int t, String what, java.util.function.Supplier<UcpRequest> call) {
        try {
            UcpRequest r = call.get();
            ucx.counted();
            return r;
        } catch (UcxException e) {
            throw failure(t, what, e.getMessage());
        }
    }

    @SuppressWarnings("unchecked")
    private <T> RmaFuture<T> watch(int t, UcpRequest request, String what, MemorySegment reply, DataType type) {
        RmaFuture<T> f = new RmaFuture<>(transport, timeoutNanos, "rank " + rank + ": " + what, world[t]);
        ucx.watch(world[t], request, status -> {
            if (status != 0) {
                f.completeExceptionally(failure(t, what, "UCX: " + ucx.statusText(status)));
            } else if (reply == null) {
                f.complete(null);
            } else {
                long old = type == DataType.INT32 ? reply.get(ValueLayout.JAVA_INT, 0) : reply.get(ValueLayout.JAVA_LONG, 0);
                f.complete((T) (Long) old);
            }
        });
        return f;
    }

    private RuntimeException failure(int t, String what, String why) {
        if (transport.failed(world[t])) return transport.failure(world[t], what);
        return new HcommException("rank " + rank + ": " + what + " failed: " + why);
    }

    /** Releases the remote keys and unregisters this rank's block (after the closing barrier: nobody reaches it now). */
    @Override
    public void close() {
        for (int r = 0; r < keys.length; r++) {
            UcpRemoteKey k = keys[r];
            if (k == null) continue;
            keys[r] = null;
            eps[r] = null;
            ucx.release(k);
            k.close();
        }
        if (registered != null) {
            ucx.release(registered);
            registered.close();
        }
    }
}
