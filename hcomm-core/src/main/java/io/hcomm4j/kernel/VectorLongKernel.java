package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * INT64 with the Vector API: each loop runs whole vectors of the preferred species, then hands the remainder to the
 * same static loop of {@link ScalarLongKernel} that the scalar kernel runs. AVG's division stays scalar: x86 has no
 * vector integer division, and the Vector API would emulate it lane by lane.
 */
final class VectorLongKernel extends AbstractKernel {
    private static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    VectorLongKernel(ReduceOp op) {
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
        ScalarLongKernel.divideBy(buf, offset, n, divisor);
    }

    @Override
    String implementation() {
        return "vector " + S.vectorBitSize() + "-bit";
    }

    static void sum(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 3;
            LongVector x = LongVector.fromMemorySegment(S, a, ao + d, NATIVE);
            LongVector y = LongVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.add(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 3;
        ScalarLongKernel.sum(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void prod(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 3;
            LongVector x = LongVector.fromMemorySegment(S, a, ao + d, NATIVE);
            LongVector y = LongVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.mul(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 3;
        ScalarLongKernel.prod(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void min(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 3;
            LongVector x = LongVector.fromMemorySegment(S, a, ao + d, NATIVE);
            LongVector y = LongVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.min(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 3;
        ScalarLongKernel.min(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void max(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 3;
            LongVector x = LongVector.fromMemorySegment(S, a, ao + d, NATIVE);
            LongVector y = LongVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.max(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 3;
        ScalarLongKernel.max(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void and(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 3;
            LongVector x = LongVector.fromMemorySegment(S, a, ao + d, NATIVE);
            LongVector y = LongVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.and(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 3;
        ScalarLongKernel.and(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void or(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 3;
            LongVector x = LongVector.fromMemorySegment(S, a, ao + d, NATIVE);
            LongVector y = LongVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.or(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 3;
        ScalarLongKernel.or(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void xor(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 3;
            LongVector x = LongVector.fromMemorySegment(S, a, ao + d, NATIVE);
            LongVector y = LongVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.lanewise(VectorOperators.XOR, y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 3;
        ScalarLongKernel.xor(a, ao + d, b, bo + d, o, oo + d, n - end);
    }
}
