package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

/**
 * BFLOAT16 without the Vector API. The static loops are also the vector kernel's tails and its fallbacks, which is what
 * keeps the two paths bit-identical. Each
 * element is widened to float32, combined there and rounded once ({@link HalfFloats}).
 */
final class ScalarBf16Kernel extends AbstractKernel {
    ScalarBf16Kernel(ReduceOp op) {
        super(DataType.BFLOAT16, op);
    }

    @Override
    void combine0(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        switch (op) {
            case SUM, AVG -> sum(a, ao, b, bo, o, oo, n);
            case PROD -> prod(a, ao, b, bo, o, oo, n);
            case MIN -> min(a, ao, b, bo, o, oo, n);
            case MAX -> max(a, ao, b, bo, o, oo, n);
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
            long d = i << 1;
            float x = HalfFloats.bf16(a.get(JAVA_SHORT_UNALIGNED, ao + d));
            float y = HalfFloats.bf16(b.get(JAVA_SHORT_UNALIGNED, bo + d));
            o.set(JAVA_SHORT_UNALIGNED, oo + d, HalfFloats.toBf16(x + y));
        }
    }

    static void prod(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 1;
            float x = HalfFloats.bf16(a.get(JAVA_SHORT_UNALIGNED, ao + d));
            float y = HalfFloats.bf16(b.get(JAVA_SHORT_UNALIGNED, bo + d));
            o.set(JAVA_SHORT_UNALIGNED, oo + d, HalfFloats.toBf16(x * y));
        }
    }

    static void min(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 1;
            float x = HalfFloats.bf16(a.get(JAVA_SHORT_UNALIGNED, ao + d));
            float y = HalfFloats.bf16(b.get(JAVA_SHORT_UNALIGNED, bo + d));
            o.set(JAVA_SHORT_UNALIGNED, oo + d, HalfFloats.toBf16(Math.min(x, y)));
        }
    }

    static void max(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            long d = i << 1;
            float x = HalfFloats.bf16(a.get(JAVA_SHORT_UNALIGNED, ao + d));
            float y = HalfFloats.bf16(b.get(JAVA_SHORT_UNALIGNED, bo + d));
            o.set(JAVA_SHORT_UNALIGNED, oo + d, HalfFloats.toBf16(Math.max(x, y)));
        }
    }

    static void divideBy(MemorySegment buf, long off, long n, int divisor) {
        float q = divisor;
        for (long i = 0; i < n; i++) {
            long p = off + (i << 1);
            buf.set(JAVA_SHORT_UNALIGNED, p, HalfFloats.toBf16(HalfFloats.bf16(buf.get(JAVA_SHORT_UNALIGNED, p)) / q));
        }
    }
}
