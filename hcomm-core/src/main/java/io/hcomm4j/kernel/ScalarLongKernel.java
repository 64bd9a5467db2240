package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

/**
 * INT64 without the Vector API. The static loops are also the vector kernel's tails and its fallbacks, which is what
 * keeps the two paths bit-identical. Sums and products wrap.
 */
final class ScalarLongKernel extends AbstractKernel {
    ScalarLongKernel(ReduceOp op) {
        super(DataType.INT64, op);
    }

    @Override
    void combine0(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        switch (op) {
            case SUM, AVG -> sum(a, ao, b, bo, o, oo, n);
            case PROD -> prod(a, ao, b, bo, o, oo, n);
            case MIN -> min(a, ao, b, bo, o, oo, n);
            case MAX -> max(a, ao, b, bo, o, oo, n);
            case BAND -> and(a, ao, b, bo, o, oo, n);
            case BOR -> or(a, ao, b, bo, o, oo, n);
            case BXOR -> xor(a, ao, b, bo, o, oo, n);
        }
    }

    @Override
    void divide(MemorySegment buf, long offset, long n, int divisor) {
        divideBy(buf, offset, n, divisor);
    }

    @Override
    String implementation() {
        return "scalar";
    }

    static void sum(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 3;
            long x = a.get(JAVA_LONG_UNALIGNED, ao + d);
            long y = b.get(JAVA_LONG_UNALIGNED, bo + d);
            o.set(JAVA_LONG_UNALIGNED, oo + d, x + y);
        }
    }

    static void prod(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 3;
            long x = a.get(JAVA_LONG_UNALIGNED, ao + d);
            long y = b.get(JAVA_LONG_UNALIGNED, bo + d);
            o.set(JAVA_LONG_UNALIGNED, oo + d, x * y);
        }
    }

    static void min(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 3;
            long x = a.get(JAVA_LONG_UNALIGNED, ao + d);
            long y = b.get(JAVA_LONG_UNALIGNED, bo + d);
            o.set(JAVA_LONG_UNALIGNED, oo + d, Math.min(x, y));
        }
    }

    static void max(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 3;
            long x = a.get(JAVA_LONG_UNALIGNED, ao + d);
            long y = b.get(JAVA_LONG_UNALIGNED, bo + d);
            o.set(JAVA_LONG_UNALIGNED, oo + d, Math.max(x, y));
        }
    }

    static void and(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 3;
            long x = a.get(JAVA_LONG_UNALIGNED, ao + d);
            long y = b.get(JAVA_LONG_UNALIGNED, bo + d);
            o.set(JAVA_LONG_UNALIGNED, oo + d, x & y);
        }
    }

    static void or(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 3;
            long x = a.get(JAVA_LONG_UNALIGNED, ao + d);
            long y = b.get(JAVA_LONG_UNALIGNED, bo + d);
            o.set(JAVA_LONG_UNALIGNED, oo + d, x | y);
        }
    }

    static void xor(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 3;
            long x = a.get(JAVA_LONG_UNALIGNED, ao + d);
            long y = b.get(JAVA_LONG_UNALIGNED, bo + d);
            o.set(JAVA_LONG_UNALIGNED, oo + d, x ^ y);
        }
    }

    static void divideBy(MemorySegment buf, long off, long n, int divisor) {
        for (long i = 0; i < n; i++) {
            long p = off + (i << 3);
            buf.set(JAVA_LONG_UNALIGNED, p, buf.get(JAVA_LONG_UNALIGNED, p) / divisor);
        }
    }
}
