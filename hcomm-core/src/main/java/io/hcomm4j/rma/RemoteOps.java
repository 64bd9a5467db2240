package io.hcomm4j.rma;

import io.hcomm4j.CommFuture;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.SendRequest;
import java.lang.foreign.MemorySegment;

/**
 * The origin's side of the active-message path, for targets whose memory this rank cannot map: each op becomes RMA
 * frames to the target's progress engine. Puts and gets go in chunks of {@value #CHUNK} bytes (the next chunk streams
 * while the target applies the last), accumulates in chunks of {@value #ACC_CHUNK} (the target combines each from a
 * buffer of that size). Ops that need an answer register a {@link Pending} per frame with the service first.
 */
final class RemoteOps {
    static final int CHUNK = 4 << 20;
    static final int ACC_CHUNK = 256 << 10;
    private final WindowImpl w;
    private final RmaService service;
    private final PeerTransport transport;
    /** Per target rank: the last request sent to it (completes after every earlier one: frames go out in order). */
    private final SendRequest[] lastSend;
    /**
     * Per target rank: a request that gets no answer (put, accumulate, signal) was sent since the last flush; only
     * those need a FLUSH round trip. Ops that are answered are complete at the target when answered.
     */
    private final boolean[] dirty;
    /** Per target rank: the last answered op sent (answers come in order: when it is done, the earlier ones are). */
    private final RmaFuture<?>[] lastAnswered;

    RemoteOps(WindowImpl w, RmaService service, int size) {
        this.w = w;
        this.service = service;
        this.transport = service.transport();
        this.lastSend = new SendRequest[size];
        this.dirty = new boolean[size];
        this.lastAnswered = new RmaFuture<?>[size];
    }

    /** The last answered op sent to {@code t} if it is not complete yet, else null. */
    RmaFuture<?> answerDue(int t) {
        RmaFuture<?> f = lastAnswered[t];
        return f == null || f.isDone() ? null : f;
    }

    /** True if requests went to {@code t} since the last call (which clears it). */
    boolean takeDirty(int t) {
        boolean d = dirty[t];
        dirty[t] = false;
        return d;
    }

    CommFuture<Void> put(int t, MemorySegment origin, long offset, int signal) {
        return write(t, origin, offset, RmaFrames.PUT, CHUNK, signal);
    }

    CommFuture<Void> accumulate(int t, MemorySegment origin, long offset, DataType type, ReduceOp op) {
        return write(t, origin, offset, RmaFrames.flags(RmaFrames.ACC, type, op), ACC_CHUNK - ACC_CHUNK % type.byteSize(), -1);
    }

    /**
     * A put or accumulate, in chunks. When nothing is unanswered or due from {@code t} (the first such op since a flush,
     * or the op of a put-then-flush loop), its last chunk asks for an answer: a flush right after it waits for that
     * answer instead of a FLUSH round trip of its own, so the op and its flush cost one round trip and one frame each
     * way. Later ones in a stream go unanswered (at most one answer per round trip, not one per op) and leave the link
     * dirty: their flush sends a FLUSH. Frames are applied in order, so the answer to the last chunk covers the op.
     */
    private CommFuture<Void> write(int t, MemorySegment origin, long offset, int flags, long chunk, int signal) {
        int world = w.world(t);
        boolean answer = signal < 0 && !dirty[t] && answerDue(t) == null;
        long n = origin.byteSize();
        SendRequest last = null;
        for (long c = 0; c < n || (n == 0 && c == 0); c += chunk) {
            long len = Math.min(chunk, n - c);
            MemorySegment part = len == n ? origin : origin.asSlice(c, len);
            if (answer && c + len >= n) {
                RmaFuture<Object> f = future(t, RmaFrames.kindName(RmaFrames.kind(flags)) + " to rank " + t + " at offset " + offset);
                last = request(t, new Pending(RmaFrames.kind(flags), world, f, null, false, new int[] {1}, new int[1]),
                        flags | RmaFrames.ANSWER, offset + c, part);
            } else {
                last = transport.sendRma(world, flags, w.id, 0, offset + c, part);
            }
            if (n == 0) break;
        }
        if (signal >= 0) last = transport.sendRma(world, RmaFrames.SIGNAL, w.id, 0, signal, null);
        lastSend[t] = last;
        if (!answer) dirty[t] = true;
        return last;
    }

    @SuppressWarnings("unchecked")
    CommFuture<Void> get(int t, MemorySegment result, long offset) {
        RmaFuture<Object> f = future(t, "get from rank " + t + " at offset " + offset);
        long n = result.byteSize();
        int parts = (int) Math.max(1, (n + CHUNK - 1) / CHUNK);
        int[] due = {parts};
        int[] status = {RmaFrames.OK};
        for (long c = 0; c < n || (n == 0 && c == 0); c += CHUNK) {
            long len = Math.min(CHUNK, n - c);
            MemorySegment into = len == n ? result : result.asSlice(c, len);
            Pending p = new Pending(RmaFrames.GET, w.world(t), f, into, false, due, status);
            request(t, p, RmaFrames.GET, offset + c, MemorySegment.ofArray(new long[] {len}));
            if (n == 0) break;
        }
        return (CommFuture<Void>) (CommFuture<?>) f;
    }

    @SuppressWarnings("unchecked")
    CommFuture<Void> getAccumulate(int t, MemorySegment origin, MemorySegment result, long offset, DataType type, ReduceOp op) {
        RmaFuture<Object> f = future(t, "getAccumulate at rank " + t + " at offset " + offset);
        long n = origin.byteSize();
        long chunk = ACC_CHUNK - ACC_CHUNK % type.byteSize();
        int parts = (int) Math.max(1, (n + chunk - 1) / chunk);
        int[] due = {parts};
        int[] status = {RmaFrames.OK};
        int flags = RmaFrames.flags(RmaFrames.GET_ACC, type, op);
        for (long c = 0; c < n || (n == 0 && c == 0); c += chunk) {
            long len = Math.min(chunk, n - c);
            Pending p = new Pending(RmaFrames.GET_ACC, w.world(t), f, len == n ? result : result.asSlice(c, len), false, due, status);
            request(t, p, flags, offset + c, len == n ? origin : origin.asSlice(c, len));
            if (n == 0) break;
        }
        return (CommFuture<Void>) (CommFuture<?>) f;
    }

    @SuppressWarnings("unchecked")
    CommFuture<Long> fetchAndOp(int t, long operand, long offset, DataType type, ReduceOp op) {
        RmaFuture<Object> f = future(t, "fetchAndOp at rank " + t + " at offset " + offset);
        Pending p = new Pending(RmaFrames.FOP, w.world(t), f, null, type == DataType.INT32, new int[] {1}, new int[1]);
        request(t, p, RmaFrames.flags(RmaFrames.FOP, type, op), offset, MemorySegment.ofArray(new long[] {operand}));
        return (CommFuture<Long>) (CommFuture<?>) f;
    }

    @SuppressWarnings("unchecked")
    CommFuture<Long> compareAndSwap(int t, long expected, long desired, long offset, DataType type) {
        RmaFuture<Object> f = future(t, "compareAndSwap at rank " + t + " at offset " + offset);
        Pending p = new Pending(RmaFrames.CAS, w.world(t), f, null, type == DataType.INT32, new int[] {1}, new int[1]);
        request(t, p, RmaFrames.flags(RmaFrames.CAS, type, null), offset, MemorySegment.ofArray(new long[] {expected, desired}));
        return (CommFuture<Long>) (CommFuture<?>) f;
    }

    /** A LOCK, UNLOCK or FLUSH: the future yields the reply's status (OK, BUSY). */
    RmaFuture<Object> control(int t, int kind, long arg) {
        RmaFuture<Object> f = future(t, RmaFrames.kindName(kind) + " of rank " + t);
        request(t, new Pending(kind, w.world(t), f, null, false, new int[] {1}, new int[1]), kind, arg, null);
        return f;
    }

    /** Waits until every request sent to {@code t} so far has left this rank (origin buffers reusable). */
    void flushLocal(int t) {
        SendRequest s = lastSend[t];
        if (s != null) s.await();
    }

    private SendRequest request(int t, Pending p, int flags, long offset, MemorySegment payload) {
        int opId = service.expect(p);
        SendRequest s = transport.sendRma(p.target, flags, w.id, opId, offset, payload);
        lastSend[t] = s;
        lastAnswered[t] = p.future;
        if (s.isDone()) {
            if (s.isCompletedExceptionally()) failed(opId, p, s);
        } else {
            s.whenComplete((v, e) -> {
                if (e != null) failed(opId, p, s);
            });
        }
        return s;
    }

    private void failed(int opId, Pending p, SendRequest s) {
        service.forget(opId);
        s.exceptionally(e -> {
            p.future.completeExceptionally(e instanceof java.util.concurrent.CompletionException c && c.getCause() != null ? c.getCause() : e);
            return null;
        });
    }

    private RmaFuture<Object> future(int t, String what) {
        return new RmaFuture<>(transport, w.timeoutNanos(), "rank " + w.rank() + ": " + what, w.world(t));
    }
}
