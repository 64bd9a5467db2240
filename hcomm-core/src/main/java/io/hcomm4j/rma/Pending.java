package io.hcomm4j.rma;

import java.lang.foreign.MemorySegment;

/**
 * One request that waits for its target's reply (get, getAccumulate, fetchAndOp, compareAndSwap, lock, unlock, flush):
 * where the reply's payload goes, how many replies are still due (a large get is several frames), and the future to
 * complete. Touched by the origin's thread until sent, then only by the progress engine.
 */
final class Pending {
    final int kind;
    /** World rank of the target. */
    final int target;
    final RmaFuture<Object> future;
    /** Where reply payloads go: {@code result} at each reply's own offset; null for replies without payload. */
    final MemorySegment result;
    /** For FOP and CAS: sign-extend a 4-byte result. */
    final boolean int32;
    /** The parts of one op (a large get is one request per chunk, each its own Pending): replies still due. */
    final int[] due;
    /** ERROR once a part was refused (shared by the parts, like {@link #due}). */
    final int[] status;

    Pending(int kind, int target, RmaFuture<Object> future, MemorySegment result, boolean int32, int[] due, int[] status) {
        this.kind = kind;
        this.target = target;
        this.future = future;
        this.result = result;
        this.int32 = int32;
        this.due = due;
        this.status = status;
    }
}
