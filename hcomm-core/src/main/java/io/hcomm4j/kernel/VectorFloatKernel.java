package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * FLOAT32 with the Vector API: each loop runs whole vectors of the preferred species, then hands the remainder to
 * the same static loop of {@link ScalarFloatKernel} that the scalar kernel runs. The lanewise MIN and MAX agree with
 * {@link Math#min(float, float)} on -0.0 and on NaN winning (checked on JDK 25, AVX-512); given two NaNs they may
 * return the other one, which the contract leaves open, so no fix-up is spent on it.
 */
final class VectorFloatKernel extends AbstractKernel {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    VectorFloatKernel(ReduceOp op) {
        super(DataType.FLOAT32, op);
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
        return "vector " + S.vectorBitSize() + "-bit";
    }

    static void sum(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 2;
            FloatVector x = FloatVector.fromMemorySegment(S, a, ao + d, NATIVE);
            FloatVector y = FloatVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.add(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 2;
        ScalarFloatKernel.sum(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void prod(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 2;
            FloatVector x = FloatVector.fromMemorySegment(S, a, ao + d, NATIVE);
            FloatVector y = FloatVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.mul(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 2;
        ScalarFloatKernel.prod(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void min(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 2;
            FloatVector x = FloatVector.fromMemorySegment(S, a, ao + d, NATIVE);
            FloatVector y = FloatVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.min(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 2;
        ScalarFloatKernel.min(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void max(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 2;
            FloatVector x = FloatVector.fromMemorySegment(S, a, ao + d, NATIVE);
            FloatVector y = FloatVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.max(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 2;
        ScalarFloatKernel.max(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void divideBy(MemorySegment buf, long off, long n, int divisor) {
        float d = divisor;
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long p = off + (i << 2);
            FloatVector.fromMemorySegment(S, buf, p, NATIVE).div(d).intoMemorySegment(buf, p, NATIVE);
        }
        ScalarFloatKernel.divideBy(buf, off + (end << 2), n - end, divisor);
    }
}
