package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Argument checks shared by every kernel, so that the loops below them can assume valid ranges. All ranges are checked
 * before anything is written: a bad call fails without leaving a half-reduced buffer behind.
 */
abstract class AbstractKernel implements ReduceKernel {
    final DataType type;
    final ReduceOp op;
    /** log2 of the element size: byte counts are {@code count << shift}. */
    final int shift;

    AbstractKernel(DataType type, ReduceOp op) {
        this.type = type;
        this.op = op;
        this.shift = Integer.numberOfTrailingZeros(type.byteSize());
    }

    @Override
    public final DataType type() {
        return type;
    }

    @Override
    public final ReduceOp op() {
        return op;
    }

    @Override
    public final void accumulate(MemorySegment acc, long accOffset, MemorySegment in, long inOffset, long count) {
        checkCount(count);
        checkRange(acc, accOffset, count, true);
        checkRange(in, inOffset, count, false);
        if (count > 0) {
            combine0(acc, accOffset, in, inOffset, acc, accOffset, count);
        }
    }

    @Override
    public final void combine(MemorySegment a, long aOffset, MemorySegment b, long bOffset,
                              MemorySegment out, long outOffset, long count) {
        checkCount(count);
        checkRange(a, aOffset, count, false);
        checkRange(b, bOffset, count, false);
        checkRange(out, outOffset, count, true);
        if (count > 0) {
            combine0(a, aOffset, b, bOffset, out, outOffset, count);
        }
    }

    @Override
    public final void finish(MemorySegment buf, long offset, long count, int divisor) {
        if (op != ReduceOp.AVG) {
            return;
        }
        if (divisor < 1) {
            throw new IllegalArgumentException("AVG divisor must be at least 1, got " + divisor);
        }
        checkCount(count);
        checkRange(buf, offset, count, true);
        if (count > 0) {
            divide(buf, offset, count, divisor);
        }
    }

    /** {@code out = a OP b} over valid, non-empty ranges; AVG sums. */
    abstract void combine0(MemorySegment a, long aOffset, MemorySegment b, long bOffset,
                           MemorySegment out, long outOffset, long count);

    /** {@code buf = buf / divisor} over a valid, non-empty range, {@code divisor >= 1}. */
    abstract void divide(MemorySegment buf, long offset, long count, int divisor);

    /** How this kernel computes, for {@link #toString()}: "scalar", "vector 512-bit" ... */
    abstract String implementation();

    @Override
    public String toString() {
        return "ReduceKernel[" + type + " " + op + ", " + implementation() + "]";
    }

    private static void checkCount(long count) {
        if (count < 0) {
            throw new IllegalArgumentException("negative element count " + count);
        }
    }

    private void checkRange(MemorySegment segment, long offset, long count, boolean written) {
        Objects.requireNonNull(segment, "segment");
        if (count > (Long.MAX_VALUE >>> shift)) {
            throw new IndexOutOfBoundsException(count + " elements of " + type + " exceed any segment");
        }
        Objects.checkFromIndexSize(offset, count << shift, segment.byteSize());
        if (written && segment.isReadOnly()) {
            throw new IllegalArgumentException("the result segment is read-only");
        }
    }
}
