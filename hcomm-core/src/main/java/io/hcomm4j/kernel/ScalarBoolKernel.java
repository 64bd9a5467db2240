package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * BOOL without the Vector API: a byte, 0 false and anything else true, combined logically and written as 0 or 1
 * (SUM, MAX, BOR: or; PROD, MIN, BAND: and; BXOR: exclusive or), so that no op depends on which non-zero byte a rank
 * wrote. The static loops are also the vector kernel's tails, which is what keeps the two paths bit-identical. AVG has
 * no BOOL kernel ({@link ReduceOp#accepts}).
 */
final class ScalarBoolKernel extends AbstractKernel {
    ScalarBoolKernel(ReduceOp op) {
        super(DataType.BOOL, op);
    }

    @Override
    void combine0(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        switch (op) {
            case SUM, MAX, BOR -> or(a, ao, b, bo, o, oo, n);
            case PROD, MIN, BAND -> and(a, ao, b, bo, o, oo, n);
            case BXOR -> xor(a, ao, b, bo, o, oo, n);
            default -> throw new IllegalStateException("no BOOL " + op); // AVG is refused before a kernel is made
        }
    }

    @Override
    void divide(MemorySegment buf, long offset, long n, int divisor) {
        throw new IllegalStateException("BOOL has no AVG");
    }

    @Override
    String implementation() {
        return "scalar";
    }

    /** 1 for any non-zero {@code x}, else 0. */
    static byte truth(int x) {
        return (byte) (x != 0 ? 1 : 0);
    }

    static void or(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, truth(a.get(JAVA_BYTE, ao + i) | b.get(JAVA_BYTE, bo + i)));
        }
    }

    static void and(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, (byte) (truth(a.get(JAVA_BYTE, ao + i)) & truth(b.get(JAVA_BYTE, bo + i))));
        }
    }

    static void xor(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, (byte) (truth(a.get(JAVA_BYTE, ao + i)) ^ truth(b.get(JAVA_BYTE, bo + i))));
        }
    }
}
