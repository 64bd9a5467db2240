package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * BOOL with the Vector API: each loop runs whole vectors of the preferred species, then hands the remainder to the
 * same static loop of {@link ScalarBoolKernel} that the scalar kernel runs. A byte's truth value is its unsigned
 * minimum with 1 ({@code UMIN}): 0 stays 0, every other byte becomes 1, without a mask or a blend.
 */
final class VectorBoolKernel extends AbstractKernel {
    private static final VectorSpecies<Byte> S = ByteVector.SPECIES_PREFERRED;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();
    private static final byte TRUE = 1;

    VectorBoolKernel(ReduceOp op) {
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
        return "vector " + S.vectorBitSize() + "-bit";
    }

    static void or(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + i, NATIVE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + i, NATIVE);
            x.or(y).lanewise(VectorOperators.UMIN, TRUE).intoMemorySegment(o, oo + i, NATIVE);
        }
        ScalarBoolKernel.or(a, ao + end, b, bo + end, o, oo + end, n - end);
    }

    static void and(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + i, NATIVE).lanewise(VectorOperators.UMIN, TRUE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + i, NATIVE).lanewise(VectorOperators.UMIN, TRUE);
            x.and(y).intoMemorySegment(o, oo + i, NATIVE);
        }
        ScalarBoolKernel.and(a, ao + end, b, bo + end, o, oo + end, n - end);
    }

    static void xor(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            ByteVector x = ByteVector.fromMemorySegment(S, a, ao + i, NATIVE).lanewise(VectorOperators.UMIN, TRUE);
            ByteVector y = ByteVector.fromMemorySegment(S, b, bo + i, NATIVE).lanewise(VectorOperators.UMIN, TRUE);
            x.lanewise(VectorOperators.XOR, y).intoMemorySegment(o, oo + i, NATIVE);
        }
        ScalarBoolKernel.xor(a, ao + end, b, bo + end, o, oo + end, n - end);
    }
}
