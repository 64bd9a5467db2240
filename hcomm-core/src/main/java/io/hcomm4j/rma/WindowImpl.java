package io.hcomm4j.rma;

import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.DataType;
import io.hcomm4j.HcommException;
import io.hcomm4j.LockType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Window;
import io.hcomm4j.memory.Buffer;
import io.hcomm4j.monitor.OpTrace;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.SharedWait;
import io.hcomm4j.transport.UcxRemoteAccess;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * A window: this rank's block and control block, and per member the way to reach its block — a mapping of its
 * shared-memory file (same host, pool memory: {@link ElementAtomics} and copies, no message) or the target's progress
 * engine ({@link RemoteOps}). Every op is checked here first ({@link WindowChecks}); epochs are tracked per target.
 */
final class WindowImpl implements Window {
    final RmaService service;
    final long id;
    /** This rank's block and control block. */
    final MemorySegment local;
    /** {@link #local} as the atomics use it (whole words where the memory allows). */
    final MemorySegment localView;
    final MemorySegment ctrl;
    private final WindowGroup group;
    /** The communicator's flight record. */
    private final OpTrace trace;
    private final PeerTransport transport;
    private final int rank;
    private final int size;
    private final long[] sizes;
    private final int[] world;
    /** Per member: its block mapped here, or null (reached through its progress engine). */
    private final MemorySegment[] data;
    /** Per member: its control block mapped here, or null. */
    private final MemorySegment[] ctrls;
    private final WindowMemory memory;
    private final WindowChecks check;
    private final RemoteOps remote;
    /** Puts, gets and atomics straight into the targets' memory through UCX (HCOMM_TRANSPORT=ucx), or null. */
    private final UcxWindow ucx;
    /** Per target: the lock this rank holds on it (-1 none, else the LockType ordinal). */
    private final int[] locked;
    private volatile boolean fenceEpoch;
    private volatile boolean lockAll;
    /** Per origin world rank: why a request of it that gets no answer was refused (reported at its next flush). */
    private final ConcurrentHashMap<Integer, String> refused = new ConcurrentHashMap<>();
    private volatile boolean closed;

    private WindowImpl(RmaService service, WindowGroup group, long id, WindowMemory memory, long[] sizes, long[] views,
                       MemorySegment[] data, MemorySegment[] ctrls, UcxWindow ucx) {
        this.service = service;
        this.group = group;
        this.trace = group.trace();
        this.id = id;
        this.memory = memory;
        this.local = memory.data();
        this.localView = memory.dataView();
        this.ctrl = memory.ctrl();
        this.transport = service.transport();
        this.rank = group.rank();
        this.size = group.size();
        this.sizes = sizes;
        this.data = data;
        this.ctrls = ctrls;
        this.world = new int[size];
        for (int r = 0; r < size; r++) world[r] = group.worldRank(r);
        this.locked = new int[size];
        java.util.Arrays.fill(locked, -1);
        this.check = new WindowChecks(this, group, rank, size, sizes, views);
        this.remote = new RemoteOps(this, service, size);
        this.ucx = ucx;
    }

    /** Collective: {@code segment} null allocates {@code bytes} from the pool. */
    static WindowImpl create(RmaService service, WindowGroup group, MemorySegment segment, long bytes) {
        String what = segment == null ? "allocateWindow" : "createWindow";
        group.checkUsable(what);
        WindowMemory memory = WindowMemory.own(group, segment, bytes, what);
        UcxRemoteAccess access = group.transport().ucxRemoteAccess();
        io.hcomm4j.ucx.UcpMemory registered = null;
        UcxWindow ucx = null;
        try {
            byte[] mine = memory.descriptor();
            if (access != null) {
                registered = UcxWindow.register(access, memory.dataView(), group.rank());
                mine = UcxWindow.describe(group, mine, memory.dataView(), registered);
            }
            byte[][] all = group.allGather(mine);
            long id = windowId(group.commId(), group.nextWindowNumber());
            int n = group.size();
            long[] sizes = new long[n];
            long[] views = new long[n];
            MemorySegment[] data = new MemorySegment[n];
            MemorySegment[] ctrls = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                sizes[r] = WindowMemory.bytesOf(all[r]);
                views[r] = WindowMemory.viewBytesOf(all[r]);
                if (r == group.rank()) {
                    data[r] = memory.dataView();
                    ctrls[r] = memory.ctrl();
                } else if (group.sameHost(r)) {
                    data[r] = memory.mapData(group, r, all[r]);
                    ctrls[r] = memory.mapCtrl(group, r, all[r]);
                }
            }
            if (access != null) ucx = UcxWindow.connect(access, group, registered, all, WindowMemory.DESCRIPTOR, data);
            WindowImpl w = new WindowImpl(service, group, id, memory, sizes, views, data, ctrls, ucx);
            service.register(w);
            try {
                group.barrier(); // nobody sends a request before every member can take it
            } catch (RuntimeException e) {
                service.unregister(w);
                throw e;
            }
            return w;
        } catch (RuntimeException e) {
            if (ucx != null) ucx.close();
            else if (registered != null) registered.close();
            memory.close();
            throw e;
        }
    }

    private static long windowId(long commId, int number) {
        long h = commId * 0x9E3779B97F4A7C15L + number;
        return h ^ (h >>> 29);
    }

    int world(int r) {
        return world[r];
    }

    int commRankOf(int worldRank) {
        for (int r = 0; r < size; r++) if (world[r] == worldRank) return r;
        throw new IllegalArgumentException("world rank " + worldRank + " is not a member of the window");
    }

    long timeoutNanos() {
        return group.timeoutNanos();
    }

    void refused(int worldRank, String why) {
        refused.put(worldRank, why);
    }

    boolean takeRefused(int worldRank) {
        return refused.remove(worldRank) != null;
    }

    // ------------------------------------------------------------------------------------ Window: data

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public MemorySegment segment() {
        return local;
    }

    @Override
    public long byteSize(int r) {
        check.member(r, "byteSize");
        return sizes[r];
    }

    @Override
    public CommFuture<Void> putAsync(MemorySegment origin, int target, long targetOffset) {
        check.data("put", origin, target, targetOffset);
        MemorySegment t = data[target];
        long ticket = record("put", target, origin.byteSize(), null, null);
        if (t == null) return traced(ticket, ucxRoad(target, origin) ? ucx.put(target, origin, targetOffset) : remote.put(target, origin, targetOffset, -1));
        MemorySegment.copy(origin, 0, t, targetOffset, origin.byteSize());
        return direct(ticket, RmaFuture.completedVoid());
    }

    @Override
    public void put(MemorySegment origin, int target, long targetOffset) {
        check.data("put", origin, target, targetOffset);
        MemorySegment t = data[target];
        long ticket = record("put", target, origin.byteSize(), null, null);
        if (t == null) {
            traced(ticket, ucxRoad(target, origin) ? ucx.put(target, origin, targetOffset) : remote.put(target, origin, targetOffset, -1)).await();
        } else {
            MemorySegment.copy(origin, 0, t, targetOffset, origin.byteSize());
            direct(ticket, null);
        }
    }

    @Override
    public CommFuture<Void> getAsync(MemorySegment result, int target, long targetOffset) {
        check.result("get", result, target, targetOffset);
        MemorySegment t = data[target];
        long ticket = record("get", target, result.byteSize(), null, null);
        if (t == null) return traced(ticket, ucxRoad(target, result) ? ucx.get(target, result, targetOffset) : remote.get(target, result, targetOffset));
        MemorySegment.copy(t, targetOffset, result, 0, result.byteSize());
        return direct(ticket, RmaFuture.completedVoid());
    }

    @Override
    public void get(MemorySegment result, int target, long targetOffset) {
        check.result("get", result, target, targetOffset);
        MemorySegment t = data[target];
        long ticket = record("get", target, result.byteSize(), null, null);
        if (t == null) {
            traced(ticket, ucxRoad(target, result) ? ucx.get(target, result, targetOffset) : remote.get(target, result, targetOffset)).await();
        } else {
            MemorySegment.copy(t, targetOffset, result, 0, result.byteSize());
            direct(ticket, null);
        }
    }

    @Override
    public CommFuture<Void> accumulateAsync(MemorySegment origin, int target, long targetOffset, DataType type, ReduceOp op) {
        check.accumulate("accumulate", origin, target, targetOffset, type, op);
        MemorySegment t = data[target];
        long ticket = record("accumulate", target, origin.byteSize(), type, op);
        if (t == null) return traced(ticket, frameRoad(target).accumulate(target, origin, targetOffset, type, op));
        ElementAtomics.accumulate(t, targetOffset, origin, 0, origin.byteSize() / type.byteSize(), type, op, null, 0);
        return direct(ticket, RmaFuture.completedVoid());
    }

    @Override
    public CommFuture<Void> getAccumulateAsync(MemorySegment origin, MemorySegment result, int target, long targetOffset,
                                               DataType type, ReduceOp op) {
        check.accumulate("getAccumulate", origin, target, targetOffset, type, op);
        check.resultLike("getAccumulate", result, origin.byteSize());
        MemorySegment t = data[target];
        long ticket = record("getAccumulate", target, origin.byteSize(), type, op);
        if (t == null) return traced(ticket, frameRoad(target).getAccumulate(target, origin, result, targetOffset, type, op));
        ElementAtomics.accumulate(t, targetOffset, origin, 0, origin.byteSize() / type.byteSize(), type, op, result, 0);
        return direct(ticket, RmaFuture.completedVoid());
    }

    @Override
    public CommFuture<Long> fetchAndOpAsync(long operand, int target, long targetOffset, DataType type, ReduceOp op) {
        check.atomic("fetchAndOp", target, targetOffset, type, op);
        MemorySegment t = data[target];
        long ticket = record("fetchAndOp", target, type.byteSize(), type, op);
        if (t == null) return traced(ticket, fetchAndOpRemote(target, operand, targetOffset, type, op));
        return direct(ticket, RmaFuture.completed(signed(type, ElementAtomics.apply(t, targetOffset, type, op, operand))));
    }

    @Override
    public long fetchAndOp(long operand, int target, long targetOffset, DataType type, ReduceOp op) {
        check.atomic("fetchAndOp", target, targetOffset, type, op);
        MemorySegment t = data[target];
        long ticket = record("fetchAndOp", target, type.byteSize(), type, op);
        if (t == null) return traced(ticket, fetchAndOpRemote(target, operand, targetOffset, type, op)).await();
        long old = signed(type, ElementAtomics.apply(t, targetOffset, type, op, operand));
        direct(ticket, null);
        return old;
    }

    @Override
    public CommFuture<Long> compareAndSwapAsync(long expected, long desired, int target, long targetOffset, DataType type) {
        check.atomic("compareAndSwap", target, targetOffset, type, ReduceOp.REPLACE);
        MemorySegment t = data[target];
        long ticket = record("compareAndSwap", target, type.byteSize(), type, null);
        if (t == null) return traced(ticket, compareAndSwapRemote(target, expected, desired, targetOffset, type));
        return direct(ticket, RmaFuture.completed(signed(type, ElementAtomics.compareAndSwap(t, targetOffset, type, expected, desired))));
    }

    @Override
    public long compareAndSwap(long expected, long desired, int target, long targetOffset, DataType type) {
        check.atomic("compareAndSwap", target, targetOffset, type, ReduceOp.REPLACE);
        MemorySegment t = data[target];
        long ticket = record("compareAndSwap", target, type.byteSize(), type, null);
        if (t == null) return traced(ticket, compareAndSwapRemote(target, expected, desired, targetOffset, type)).await();
        long old = signed(type, ElementAtomics.compareAndSwap(t, targetOffset, type, expected, desired));
        direct(ticket, null);
        return old;
    }

    private CommFuture<Long> fetchAndOpRemote(int target, long operand, long offset, DataType type, ReduceOp op) {
        if (UcxWindow.atomicOf(op) != null && atomicRoad(target)) return ucx.fetchAndOp(target, operand, offset, type, op);
        return frameRoad(target).fetchAndOp(target, operand, offset, type, op);
    }

    private CommFuture<Long> compareAndSwapRemote(int target, long expected, long desired, long offset, DataType type) {
        if (atomicRoad(target)) return ucx.compareAndSwap(target, expected, desired, offset, type);
        return frameRoad(target).compareAndSwap(target, expected, desired, offset, type);
    }

    /** As {@link #ucxRoad} for an atomic: UCX's atomics reach {@code target}. */
    private boolean atomicRoad(int target) {
        if (ucx == null || !ucx.atomicsReach(target)) return false;
        flushFrames(target);
        return true;
    }

    /**
     * True if an op on {@code buf} goes straight to {@code target}'s memory through UCX: its block is
     * registered and {@code buf} is native (UCX cannot read or write a heap array). Ops are applied in the order they
     * were issued whichever road they take: the frames' writes to {@code target} not known complete are flushed first.
     */
    private boolean ucxRoad(int target, MemorySegment buf) {
        if (ucx == null || !ucx.reaches(target)) return false;
        if (!buf.isNative()) {
            ucx.flush(target);
            return false;
        }
        flushFrames(target);
        return true;
    }

    /** The frames' road to {@code target}, after UCX's writes to it are complete (ops keep their order across roads). */
    private RemoteOps frameRoad(int target) {
        if (ucx != null) ucx.flush(target);
        return remote;
    }

    /** Opens a one-sided op's record in the communicator's flight record. */
    private long record(String op, int target, long bytes, DataType type, ReduceOp redop) {
        return trace.open(OpTrace.Kind.ONE_SIDED, op, -1, target, -1, type == null ? null : type.name(), redop == null ? null : redop.name(),
                type == null ? -1 : bytes / type.byteSize(), bytes, 0, 0, OpTrace.State.STARTED);
    }

    /** A remote op's future: its record ends when it completes. */
    private <F extends CommFuture<?>> F traced(long ticket, F f) {
        if (f instanceof io.hcomm4j.transport.Request<?> r) r.recordIn(trace, ticket);
        else if (f instanceof RmaFuture<?> r) r.recordIn(trace, ticket);
        else trace.ended(ticket, null, null, null);
        return f;
    }

    /** A direct op (shared memory, done by this thread): its record ends now. */
    private <F> F direct(long ticket, F result) {
        trace.ended(ticket, null, DIRECT, null);
        return result;
    }

    private static final String DIRECT = "shm_direct";

    private static long signed(DataType type, long bits) {
        return type == DataType.INT32 ? (long) (int) bits : bits;
    }

    @Override
    public CommFuture<Void> putSignalAsync(MemorySegment origin, int target, long targetOffset, int signalIndex) {
        check.data("putSignal", origin, target, targetOffset);
        check.signal("putSignal", signalIndex);
        MemorySegment t = data[target];
        long ticket = record("putSignal", target, origin.byteSize(), null, null);
        if (t == null) return traced(ticket, frameRoad(target).put(target, origin, targetOffset, signalIndex));
        MemorySegment.copy(origin, 0, t, targetOffset, origin.byteSize());
        if (ControlBlock.signal(ctrls[target], rank, signalIndex) && target != rank) transport.wake(world[target]);
        return direct(ticket, RmaFuture.completedVoid());
    }

    @Override
    public void waitSignal(int peer, int signalIndex, long count, Duration timeout) {
        check.open("waitSignal");
        check.member(peer, "waitSignal");
        check.signal("waitSignal", signalIndex);
        Objects.requireNonNull(timeout, "timeout");
        if (count < 0) throw new IllegalArgumentException("rank " + rank + ": waitSignal: count " + count + " is negative");
        SharedWait w = new SharedWait() {
            @Override
            public boolean done() {
                return ControlBlock.signals(ctrl, peer, signalIndex) >= count || group.failed(peer);
            }

            @Override
            public boolean arm() {
                ControlBlock.sleeping(ctrl, true);
                return done();
            }

            @Override
            public void disarm() {
                ControlBlock.sleeping(ctrl, false);
            }
        };
        long start = System.nanoTime();
        transport.awaitPolling(w, start + timeout.toNanos()); // signals come as frames or as peers' stores
        if (ControlBlock.signals(ctrl, peer, signalIndex) >= count) {
            ControlBlock.consumeSignals(ctrl, peer, signalIndex, count);
            return;
        }
        RuntimeException failed = group.failure(peer, "waitSignal for rank " + peer);
        if (failed != null) throw failed;
        throw new CommTimeoutException("rank " + rank + ": waitSignal: signal " + signalIndex + " of rank " + peer + " reached "
                + ControlBlock.signals(ctrl, peer, signalIndex) + " of " + count + " within " + timeout.toMillis() + " ms");
    }

    // ------------------------------------------------------------------------------------ Window: epochs

    /** True if an access epoch to {@code target} is open. */
    boolean inEpoch(int target) {
        return fenceEpoch || lockAll || locked[target] >= 0;
    }

    @Override
    public void fence() {
        check.open("fence");
        flushAll();
        group.barrier();
        fenceEpoch = true;
    }

    @Override
    public void lock(int target, LockType type) {
        check.open("lock");
        check.member(target, "lock");
        Objects.requireNonNull(type, "type");
        if (locked[target] >= 0 || lockAll) {
            throw new IllegalStateException("rank " + rank + ": lock: this rank already holds the lock of rank " + target);
        }
        acquire(target, type == LockType.EXCLUSIVE);
        locked[target] = type.ordinal();
    }

    @Override
    public void unlock(int target) {
        check.open("unlock");
        check.member(target, "unlock");
        if (locked[target] < 0) throw new IllegalStateException("rank " + rank + ": unlock: rank " + target + " is not locked by lock()");
        boolean exclusive = locked[target] == LockType.EXCLUSIVE.ordinal();
        locked[target] = -1;
        release(target, exclusive);
    }

    @Override
    public void lockAll() {
        check.open("lockAll");
        if (lockAll) throw new IllegalStateException("rank " + rank + ": lockAll: already held");
        for (int r = 0; r < size; r++) {
            if (locked[r] >= 0) throw new IllegalStateException("rank " + rank + ": lockAll: rank " + r + " is locked by lock()");
        }
        int got = 0;
        try {
            for (; got < size; got++) acquire(got, false);
        } catch (RuntimeException e) {
            for (int r = 0; r < got; r++) {
                try {
                    release(r, false);
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
        lockAll = true;
    }

    @Override
    public void unlockAll() {
        check.open("unlockAll");
        if (!lockAll) throw new IllegalStateException("rank " + rank + ": unlockAll: lockAll() was not called");
        lockAll = false;
        RuntimeException first = null;
        for (int r = 0; r < size; r++) {
            try {
                release(r, false);
            } catch (RuntimeException e) {
                if (first == null) first = e;
                else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }

    private void acquire(int target, boolean exclusive) {
        long deadline = System.nanoTime() + group.timeoutNanos();
        MemorySegment c = ctrls[target];
        for (int attempt = 0; ; attempt++) {
            if (c != null) {
                if (ControlBlock.tryLock(c, exclusive, service.worldRank())) return;
            } else {
                RmaFuture<Object> f = remote.control(target, RmaFrames.LOCK, exclusive ? 1 : 0);
                if ((Integer) f.await() == RmaFrames.OK) return;
            }
            RuntimeException failed = group.failure(target, "lock of rank " + target);
            if (failed != null) throw failed;
            if (c != null) {
                int holder = ControlBlock.exclusiveHolder(c);
                if (holder >= 0 && transport.failed(holder)) {
                    throw transport.failure(holder, "lock of rank " + target + " (its lock is held by failed world rank " + holder + ")");
                }
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new CommTimeoutException("rank " + rank + ": lock of rank " + target + " not granted within "
                        + group.timeoutNanos() / 1_000_000 + " ms (HCOMM_TIMEOUT); the lock is "
                        + (c != null ? ControlBlock.describeLock(c) : "held by others"));
            }
            backoff(attempt);
        }
    }

    /** Spin a little, then yield, then sleep up to a millisecond: never an unbounded busy spin. */
    private static void backoff(int attempt) {
        if (attempt < 64) Thread.onSpinWait();
        else if (attempt < 128) Thread.yield();
        else LockSupport.parkNanos(Math.min(1_000_000L, 1_000L << Math.min(10, (attempt - 128) / 16)));
    }

    private void release(int target, boolean exclusive) {
        if (group.failed(target)) throw group.failure(target, "unlock of rank " + target);
        if (ctrls[target] != null) {
            flush(target);
            ControlBlock.unlock(ctrls[target], exclusive);
        } else {
            Object status = frameRoad(target).control(target, RmaFrames.UNLOCK, exclusive ? 1 : 0).await();
            if ((Integer) status != RmaFrames.OK) throw refusedEarlier(target);
        }
    }

    @Override
    public void flush(int target) {
        check.open("flush");
        check.member(target, "flush");
        if (data[target] != null) {
            VarHandle.fullFence(); // direct stores: visible to the target's next acquire
            return;
        }
        if (ucx != null) ucx.flush(target);
        flushFrames(target);
    }

    /** Waits until every op that went to {@code target} as frames is complete there. */
    private void flushFrames(int target) {
        if (!remote.takeDirty(target)) {
            // nothing unanswered went there: the answered ops are complete once the last one is answered
            RmaFuture<?> due = remote.answerDue(target);
            if (due != null) due.await();
            return;
        }
        Object status = remote.control(target, RmaFrames.FLUSH, 0).await();
        if ((Integer) status != RmaFrames.OK) throw refusedEarlier(target);
    }

    private HcommException refusedEarlier(int target) {
        return new HcommException("rank " + rank + ": rank " + target + " refused an earlier put or accumulate of this rank (see its log)");
    }

    @Override
    public void flushAll() {
        for (int r = 0; r < size; r++) flush(r);
    }

    @Override
    public void flushLocal(int target) {
        check.open("flushLocal");
        check.member(target, "flushLocal");
        if (ucx != null) ucx.flush(target); // UCX tells of local completion only with the remote one
        remote.flushLocal(target);
    }

    @Override
    public void flushLocalAll() {
        for (int r = 0; r < size; r++) flushLocal(r);
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        try {
            flushAll();
            group.barrier(); // every member is done with every block
        } finally {
            closed = true;
            service.unregister(this);
            if (ucx != null) ucx.close();
            memory.close();
        }
    }

    @Override
    public String toString() {
        return "Window[rank " + rank + " of " + size + ", " + local.byteSize() + " bytes here]";
    }
}
