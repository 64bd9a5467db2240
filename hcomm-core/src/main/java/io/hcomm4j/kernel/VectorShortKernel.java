package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * INT16 with the Vector API: each loop runs whole vectors of the preferred species, then hands the remainder to the
 * same static loop of {@link ScalarShortKernel} that the scalar kernel runs. Lanes wrap as Java's {@code (short)} casts
 * do. AVG's division stays scalar: x86 has no vector integer division, and the Vector API would emulate it lane by lane.
 */
final class VectorShortKernel extends AbstractKernel {
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_PREFERRED;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    VectorShortKernel(ReduceOp op) {
        super(DataType.INT16, op);
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
        ScalarShortKernel.divideBy(buf, offset, n, divisor);
    }

    @Override
    String implementation() {
        return "vector " + S.vectorBitSize() + "-bit";
    }

    static void sum(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            ShortVector x = ShortVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ShortVector y = ShortVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.add(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarShortKernel.sum(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void prod(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            ShortVector x = ShortVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ShortVector y = ShortVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.mul(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarShortKernel.prod(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void min(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            ShortVector x = ShortVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ShortVector y = ShortVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.min(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarShortKernel.min(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void max(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            ShortVector x = ShortVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ShortVector y = ShortVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.max(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarShortKernel.max(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void and(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            ShortVector x = ShortVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ShortVector y = ShortVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.and(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarShortKernel.and(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void or(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            ShortVector x = ShortVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ShortVector y = ShortVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.or(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarShortKernel.or(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void xor(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            ShortVector x = ShortVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ShortVector y = ShortVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.lanewise(VectorOperators.XOR, y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarShortKernel.xor(a, ao + d, b, bo + d, o, oo + d, n - end);
    }
}
