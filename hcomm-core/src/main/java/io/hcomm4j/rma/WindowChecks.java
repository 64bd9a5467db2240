package io.hcomm4j.rma;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Window;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The checks every window op passes before it touches memory or sends a frame: each failure names the op, this rank,
 * the target, and the offending argument with its value, and leaves the target untouched.
 */
final class WindowChecks {
    private final WindowImpl w;
    private final WindowGroup group;
    private final int rank;
    private final int size;
    private final long[] sizes;
    /** Per member: the bytes its atomics may touch (1- and 2-byte elements are updated by a CAS of their 4-byte word). */
    private final long[] views;

    WindowChecks(WindowImpl w, WindowGroup group, int rank, int size, long[] sizes, long[] views) {
        this.w = w;
        this.group = group;
        this.rank = rank;
        this.size = size;
        this.sizes = sizes;
        this.views = views;
    }

    void open(String op) {
        if (w.isClosed()) throw new IllegalStateException("rank " + rank + ": " + op + ": the window is closed");
        group.checkUsable(op);
    }

    void member(int r, String op) {
        if (r < 0 || r >= size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": rank " + r + " is out of range [0, " + size + ")");
        }
    }

    /** An op on {@code length} bytes of {@code target}'s block at {@code offset}. */
    void target(String op, int target, long offset, long length) {
        open(op);
        member(target, op);
        if (offset < 0 || offset > sizes[target] - length) {
            throw new IndexOutOfBoundsException("rank " + rank + ": " + op + " at rank " + target + ": offset " + offset + " + "
                    + length + " bytes is outside rank " + target + "'s window of " + sizes[target] + " bytes");
        }
        if (!w.inEpoch(target)) {
            throw new IllegalStateException("rank " + rank + ": " + op + " at rank " + target + " (offset " + offset
                    + "): no access epoch is open to rank " + target + " (call fence(), lock(" + target + ", ...) or lockAll() first)");
        }
        if (group.failed(target)) throw group.failure(target, op + " at rank " + target);
    }

    void data(String op, MemorySegment origin, int target, long offset) {
        Objects.requireNonNull(origin, "origin");
        target(op, target, offset, origin.byteSize());
    }

    void result(String op, MemorySegment result, int target, long offset) {
        Objects.requireNonNull(result, "result");
        if (result.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": " + op + ": result is read-only");
        target(op, target, offset, result.byteSize());
    }

    void resultLike(String op, MemorySegment result, long bytes) {
        Objects.requireNonNull(result, "result");
        if (result.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": " + op + ": result is read-only");
        if (result.byteSize() != bytes) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": result has " + result.byteSize()
                    + " bytes, origin " + bytes);
        }
    }

    void accumulate(String op, MemorySegment origin, int target, long offset, DataType type, ReduceOp rop) {
        Objects.requireNonNull(origin, "origin");
        elementOp(op, target, offset, type, rop);
        if (origin.byteSize() % type.byteSize() != 0) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + " at rank " + target + ": origin has "
                    + origin.byteSize() + " bytes, not a whole number of " + type + " elements");
        }
        target(op, target, offset, origin.byteSize());
        words(op, target, offset + origin.byteSize(), type);
    }

    /** 1- and 2-byte elements up to {@code end}: their 4-byte words must lie in the target's memory. */
    private void words(String op, int target, long end, DataType type) {
        if (type.byteSize() < 4 && ((end + 3) & ~3L) > views[target]) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + " at rank " + target + ": " + type
                    + " elements up to byte " + end + " share a 4-byte word that extends past rank " + target
                    + "'s window memory of " + views[target] + " bytes (createWindow over a segment that is not a whole "
                    + "number of 4-byte words; allocateWindow has no such limit)");
        }
    }

    void atomic(String op, int target, long offset, DataType type, ReduceOp rop) {
        elementOp(op, target, offset, type, rop);
        if (type != DataType.INT32 && type != DataType.INT64) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + " at rank " + target + " (offset " + offset
                    + "): type " + type + " is not allowed: INT32 or INT64");
        }
        target(op, target, offset, type.byteSize());
    }

    private void elementOp(String op, int target, long offset, DataType type, ReduceOp rop) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(rop, "op");
        if (rop == ReduceOp.AVG) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + " at rank " + target + ": op AVG is for collectives only");
        }
        if (!rop.accepts(type)) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + " at rank " + target + ": op " + rop + " is not defined on type "
                    + type + " (bitwise ops take the integer types INT8, UINT8, INT16, INT32, INT64 and BOOL)");
        }
        if (offset % type.byteSize() != 0) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + " at rank " + target + ": offset " + offset
                    + " is not a multiple of " + type + "'s " + type.byteSize() + " bytes (atomic access needs alignment)");
        }
    }

    void signal(String op, int index) {
        if (index < 0 || index >= Window.SIGNALS) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": signalIndex " + index + " is out of range [0, "
                    + Window.SIGNALS + ")");
        }
    }
}
