package io.hcomm4j.rma;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Window;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The target's side of the active-message path: a request from an origin that cannot reach this rank's window memory
 * itself, applied by this rank's progress engine (no call from the application) with the same element atomics as the
 * direct path, answered where the origin waits for an answer. Requests from one origin are applied in the order they
 * were sent. A request this rank cannot apply throws; the service answers ERROR and the origin fails its op.
 */
final class TargetOps {
    private TargetOps() {
    }

    /** True for the requests whose origin waits for a REPLY. */
    static boolean answers(int flags) {
        if ((flags & RmaFrames.ANSWER) != 0) return true;
        return switch (RmaFrames.kind(flags)) {
            case RmaFrames.GET, RmaFrames.GET_ACC, RmaFrames.FOP, RmaFrames.CAS, RmaFrames.LOCK, RmaFrames.UNLOCK,
                 RmaFrames.FLUSH -> true;
            default -> false;
        };
    }

    static void apply(WindowImpl w, int peer, int flags, int opId, long offset, MemorySegment payload) {
        int kind = RmaFrames.kind(flags);
        switch (kind) {
            case RmaFrames.PUT -> { // the payload was read straight into the window
                if ((flags & RmaFrames.ANSWER) != 0) replyApplied(w, peer, opId);
            }
            case RmaFrames.GET -> {
                long length = payload.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                range(w, offset, length);
                reply(w, peer, opId, RmaFrames.OK, w.local.asSlice(offset, length));
            }
            case RmaFrames.ACC, RmaFrames.GET_ACC -> {
                DataType type = type(flags);
                ReduceOp op = op(flags);
                defined(op, type);
                long length = payload.byteSize();
                range(w, offset, length);
                aligned(offset, type);
                MemorySegment old = kind == RmaFrames.GET_ACC ? MemorySegment.ofArray(new byte[(int) length]) : null;
                ElementAtomics.accumulate(w.localView, offset, payload, 0, length / type.byteSize(), type, op, old, 0);
                if (old != null) reply(w, peer, opId, RmaFrames.OK, old);
                else if ((flags & RmaFrames.ANSWER) != 0) replyApplied(w, peer, opId);
            }
            case RmaFrames.FOP, RmaFrames.CAS -> {
                DataType type = type(flags);
                if (kind == RmaFrames.FOP) defined(op(flags), type);
                range(w, offset, type.byteSize());
                aligned(offset, type);
                long a = payload.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                long old = kind == RmaFrames.FOP
                        ? ElementAtomics.apply(w.localView, offset, type, op(flags), a)
                        : ElementAtomics.compareAndSwap(w.localView, offset, type, a, payload.get(ValueLayout.JAVA_LONG_UNALIGNED, 8));
                reply(w, peer, opId, RmaFrames.OK, MemorySegment.ofArray(new long[] {old}));
            }
            case RmaFrames.SIGNAL -> {
                if (offset < 0 || offset >= Window.SIGNALS) throw new IllegalArgumentException("signal index " + offset);
                ControlBlock.signal(w.ctrl, w.commRankOf(peer), (int) offset);
            }
            case RmaFrames.LOCK -> {
                boolean granted = ControlBlock.tryLock(w.ctrl, offset == 1, peer);
                reply(w, peer, opId, granted ? RmaFrames.OK : RmaFrames.BUSY, null);
            }
            case RmaFrames.UNLOCK -> {
                ControlBlock.unlock(w.ctrl, offset == 1);
                replyApplied(w, peer, opId);
            }
            case RmaFrames.FLUSH -> replyApplied(w, peer, opId);
            default -> throw new IllegalArgumentException("unknown one-sided request " + kind);
        }
    }

    /** OK, or ERROR if a request of {@code peer} was refused since its last answer of this kind (then forgotten). */
    private static void replyApplied(WindowImpl w, int peer, int opId) {
        reply(w, peer, opId, w.takeRefused(peer) ? RmaFrames.ERROR : RmaFrames.OK, null);
    }

    private static void reply(WindowImpl w, int peer, int opId, int status, MemorySegment payload) {
        w.service.transport().sendRma(peer, RmaFrames.reply(status), w.id, opId, 0, payload);
    }

    private static DataType type(int flags) {
        DataType t = RmaFrames.type(flags);
        if (t == null) throw new IllegalArgumentException("no such DataType in flags 0x" + Integer.toHexString(flags));
        return t;
    }

    private static ReduceOp op(int flags) {
        ReduceOp o = RmaFrames.op(flags);
        if (o == null || o == ReduceOp.AVG) throw new IllegalArgumentException("no such one-sided op in flags 0x" + Integer.toHexString(flags));
        return o;
    }

    /** A frame's op on a type it does not define (the origin checked it; a foreign or broken frame did not). */
    private static void defined(ReduceOp op, DataType type) {
        if (!op.accepts(type)) throw new IllegalArgumentException("no one-sided " + op + " on " + type);
    }

    private static void range(WindowImpl w, long offset, long length) {
        if (offset < 0 || length < 0 || offset > w.local.byteSize() - length) {
            throw new IndexOutOfBoundsException("[" + offset + ", +" + length + ") is outside the window's " + w.local.byteSize() + " bytes");
        }
    }

    private static void aligned(long offset, DataType type) {
        if (offset % type.byteSize() != 0) throw new IllegalArgumentException("offset " + offset + " is not aligned to " + type);
    }
}
