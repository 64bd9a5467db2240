package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * BFLOAT16 with the Vector API, bit-identical to {@link ScalarBf16Kernel}.
 *
 * <p>The loops load the 16-bit elements as int lanes holding two elements each, so that no lane-count-changing
 * conversion (short to int and back, which costs shuffles) is needed: a bfloat16 is the upper half of a float32, so
 * the element in a lane's high half already is a float once its low half is cleared, and the one in the low half
 * becomes one by a shift. Each half is combined as float32 and rounded to nearest even with the same carry trick as
 * {@link HalfFloats#toBf16}; NaNs become {@link HalfFloats#BF16_NAN}. Which half holds which element depends on the
 * byte order, but each element goes back where it came from either way.
 */
final class VectorBf16Kernel extends AbstractKernel {
    private static final VectorSpecies<Integer> S = IntVector.SPECIES_PREFERRED;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();
    private static final int HIGH = 0xFFFF_0000;
    private static final int NAN_BITS = HalfFloats.BF16_NAN << 16;

    VectorBf16Kernel(ReduceOp op) {
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
    String implementation() {
        return "vector " + S.vectorBitSize() + "-bit";
    }

    /** Elements in the whole-vector part of a loop over {@code n} elements: a multiple of two per lane. */
    private static long vectorElements(long n) {
        return S.loopBound(n >>> 1) << 1;
    }

    static void sum(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = vectorElements(n);
        for (long i = 0; i < end; i += 2L * S.length()) {
            long d = i << 1;
            IntVector x = IntVector.fromMemorySegment(S, a, ao + d, NATIVE);
            IntVector y = IntVector.fromMemorySegment(S, b, bo + d, NATIVE);
            pack(low(x).add(low(y)), high(x).add(high(y))).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarBf16Kernel.sum(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void prod(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = vectorElements(n);
        for (long i = 0; i < end; i += 2L * S.length()) {
            long d = i << 1;
            IntVector x = IntVector.fromMemorySegment(S, a, ao + d, NATIVE);
            IntVector y = IntVector.fromMemorySegment(S, b, bo + d, NATIVE);
            pack(low(x).mul(low(y)), high(x).mul(high(y))).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarBf16Kernel.prod(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void min(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = vectorElements(n);
        for (long i = 0; i < end; i += 2L * S.length()) {
            long d = i << 1;
            IntVector x = IntVector.fromMemorySegment(S, a, ao + d, NATIVE);
            IntVector y = IntVector.fromMemorySegment(S, b, bo + d, NATIVE);
            pack(low(x).min(low(y)), high(x).min(high(y))).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarBf16Kernel.min(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void max(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = vectorElements(n);
        for (long i = 0; i < end; i += 2L * S.length()) {
            long d = i << 1;
            IntVector x = IntVector.fromMemorySegment(S, a, ao + d, NATIVE);
            IntVector y = IntVector.fromMemorySegment(S, b, bo + d, NATIVE);
            pack(low(x).max(low(y)), high(x).max(high(y))).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarBf16Kernel.max(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    @Override
    void divide(MemorySegment buf, long off, long n, int divisor) {
        float q = divisor;
        long end = vectorElements(n);
        for (long i = 0; i < end; i += 2L * S.length()) {
            long p = off + (i << 1);
            IntVector x = IntVector.fromMemorySegment(S, buf, p, NATIVE);
            pack(low(x).div(q), high(x).div(q)).intoMemorySegment(buf, p, NATIVE);
        }
        ScalarBf16Kernel.divideBy(buf, off + (end << 1), n - end, divisor);
    }

    private static FloatVector low(IntVector pairs) {
        return pairs.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    private static FloatVector high(IntVector pairs) {
        return pairs.and(HIGH).reinterpretAsFloats();
    }

    private static IntVector pack(FloatVector low, FloatVector high) {
        return round(low).lanewise(VectorOperators.LSHR, 16).or(round(high).and(HIGH));
    }

    /** Float bits whose upper half is the rounded bfloat16 (see {@link HalfFloats#toBf16}). */
    private static IntVector round(FloatVector f) {
        IntVector bits = f.reinterpretAsInts();
        IntVector rounded = bits.add(bits.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7FFF);
        return rounded.blend(NAN_BITS, bits.and(0x7FFF_FFFF).compare(VectorOperators.GT, 0x7F80_0000));
    }
}
