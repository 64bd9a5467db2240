package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * INT8 and UINT8 with the Vector API: each loop runs whole vectors of the preferred species, then hands the remainder
 * to the same static loop of {@link ScalarByteKernel} that the scalar kernel runs. UINT8 MIN and MAX are the Vector
 * API's unsigned {@code UMIN}/{@code UMAX} (new in JDK 24). AVG's division stays scalar: x86 has no vector integer
 * division.
 */
final class VectorByteKernel extends AbstractKernel {
    private static final VectorSpecies<Byte> S = ByteVector.SPECIES_PREFERRED;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();
    private final boolean unsigned;

    VectorByteKernel(DataType type, ReduceOp op) {
        super(type, op);
        this.unsigned = type == DataType.UINT8;
    }

    @Override
    void combine0(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        switch (op) {
            case SUM, AVG -> sum(a, ao, b, bo, o, oo, n);
            case PROD -> prod(a, ao, b, bo, o, oo, n);
            case MIN -> {
                if (unsigned) {
                    minUnsigned(a, ao, b, bo, o, oo, n);
                } else {
                    min(a, ao, b, bo, o, oo, n);
                }
            }
            case MAX -> {
                if (unsigned) {
                    maxUnsigned(a, ao, b, bo, o, oo, n);
                } else {
                    max(a, ao, b, bo, o, oo, n);
                }
            }
            case BAND -> and(a, ao, b, bo, o, oo, n);
            case BOR -> or(a, ao, b, bo, o, oo, n);
            case BXOR -> xor(a, ao, b, bo, o, oo, n);
        }
    }

    @Override
    void divide(MemorySegment buf, long offset, long n, int divisor) {
        if (unsigned) {
            ScalarByteKernel.divideUnsigned(buf, offset, n, divisor);
        } else {
            ScalarByteKernel.divideSigned(buf, offset, n, divisor);
        }
    }

    @Override
    String implementation() {
        return "vector " + S.vectorBitSize() + "-bit";
    }

    static void sum(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i;
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.add(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end;
        ScalarByteKernel.sum(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void prod(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i;
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.mul(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end;
        ScalarByteKernel.prod(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void min(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i;
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.min(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end;
        ScalarByteKernel.min(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void max(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i;
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.max(y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end;
        ScalarByteKernel.max(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void minUnsigned(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i;
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.lanewise(VectorOperators.UMIN, y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end;
        ScalarByteKernel.minUnsigned(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void maxUnsigned(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i;
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + d, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + d, NATIVE);
            x.lanewise(VectorOperators.UMAX, y).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end;
        ScalarByteKernel.maxUnsigned(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void and(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + i, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + i, NATIVE);
            x.and(y).intoMemorySegment(o, oo + i, NATIVE);
        }
        ScalarByteKernel.and(a, ao + end, b, bo + end, o, oo + end, n - end);
    }

    static void or(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + i, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + i, NATIVE);
            x.or(y).intoMemorySegment(o, oo + i, NATIVE);
        }
        ScalarByteKernel.or(a, ao + end, b, bo + end, o, oo + end, n - end);
    }

    static void xor(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + i, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + i, NATIVE);
            x.lanewise(VectorOperators.XOR, y).intoMemorySegment(o, oo + i, NATIVE);
        }
        ScalarByteKernel.xor(a, ao + end, b, bo + end, o, oo + end, n - end);
    }
}
