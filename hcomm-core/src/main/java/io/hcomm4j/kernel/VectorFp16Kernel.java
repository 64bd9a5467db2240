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
 * FLOAT16 with the Vector API, bit-identical to {@link ScalarFp16Kernel}.
 *
 * <p>The Vector API of JDK 25 has no binary16 conversion ({@code VectorOperators} offers {@code S2F}, which converts
 * the short's integer value, and nothing like {@code F2HF}), so both directions are integer bit manipulation on int
 * lanes, two elements per lane as in {@link VectorBf16Kernel}:
 * <ul>
 *   <li>widening is exact: normal values and infinities/NaNs re-bias the exponent, subnormals are their integer
 *       significand times 2<sup>-24</sup> (an exact float multiply that never sees a float subnormal);</li>
 *   <li>narrowing rounds to nearest even like {@link Float#floatToFloat16}: normal results by re-biasing plus a
 *       carry trick on the 13 dropped bits, subnormal results by one float addition of 0.5, which rounds the value to
 *       a multiple of 2<sup>-24</sup> in hardware; magnitudes from 65536 up become infinity, NaNs
 *       {@link HalfFloats#FP16_NAN}.</li>
 * </ul>
 */
final class VectorFp16Kernel extends AbstractKernel {
    private static final VectorSpecies<Integer> S = IntVector.SPECIES_PREFERRED;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();
    /** float32 bias minus binary16 bias (127 - 15), in exponent position. */
    private static final int REBIAS = 112 << 23;
    /** The smallest normal binary16, 2^-14, as float bits. */
    private static final int MIN_NORMAL_BITS = 113 << 23;
    /** 65536 as float bits: from here on the result is infinite whatever the rounding. */
    private static final int OVERFLOW_BITS = 143 << 23;
    private static final int HALF_BITS = Float.floatToRawIntBits(0.5f);

    VectorFp16Kernel(ReduceOp op) {
        super(DataType.FLOAT16, op);
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
        ScalarFp16Kernel.sum(a, ao + d, b, bo + d, o, oo + d, n - end);
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
        ScalarFp16Kernel.prod(a, ao + d, b, bo + d, o, oo + d, n - end);
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
        ScalarFp16Kernel.min(a, ao + d, b, bo + d, o, oo + d, n - end);
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
        ScalarFp16Kernel.max(a, ao + d, b, bo + d, o, oo + d, n - end);
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
        ScalarFp16Kernel.divideBy(buf, off + (end << 1), n - end, divisor);
    }

    private static FloatVector low(IntVector pairs) {
        return widen(pairs.and(0xFFFF));
    }

    private static FloatVector high(IntVector pairs) {
        return widen(pairs.lanewise(VectorOperators.LSHR, 16));
    }

    private static IntVector pack(FloatVector low, FloatVector high) {
        return narrow(low).or(narrow(high).lanewise(VectorOperators.LSHL, 16));
    }

    /** binary16 bits (zero-extended, 0..0xFFFF) to float32, exactly as {@link Float#float16ToFloat}. */
    static FloatVector widen(IntVector h) {
        IntVector magnitude = h.and(0x7FFF);
        IntVector sign = h.and(0x8000).lanewise(VectorOperators.LSHL, 16);
        IntVector normal = magnitude.lanewise(VectorOperators.LSHL, 13).add(REBIAS);
        // infinities and NaNs: exponent 31 must become 255, i.e. re-bias once more
        normal = normal.add(REBIAS, magnitude.compare(VectorOperators.GE, 0x7C00));
        FloatVector subnormal = ((FloatVector) magnitude.convert(VectorOperators.I2F, 0)).mul(0x1p-24f);
        IntVector bits = normal.blend(subnormal.reinterpretAsInts(), magnitude.compare(VectorOperators.LT, 0x0400));
        return bits.or(sign).reinterpretAsFloats();
    }

    /** float32 to binary16 bits in the low 16 bits of each lane, as {@link HalfFloats#toFp16}. */
    static IntVector narrow(FloatVector f) {
        IntVector bits = f.reinterpretAsInts();
        IntVector magnitude = bits.and(0x7FFF_FFFF);
        IntVector sign = bits.lanewise(VectorOperators.LSHR, 16).and(0x8000);
        // normal: re-bias, then add 0xFFF plus the lowest kept bit, which carries exactly when rounding up to even
        IntVector normal = magnitude.add(0xFFF - REBIAS)
                .add(magnitude.lanewise(VectorOperators.LSHR, 13).and(1))
                .lanewise(VectorOperators.LSHR, 13);
        // subnormal (or zero): 0.5 + |f| rounds |f| to a multiple of 2^-24, the significand lands in the low bits
        IntVector subnormal = magnitude.reinterpretAsFloats().add(0.5f).reinterpretAsInts().sub(HALF_BITS);
        IntVector h = normal.blend(subnormal, magnitude.compare(VectorOperators.LT, MIN_NORMAL_BITS));
        h = h.blend(0x7C00, magnitude.compare(VectorOperators.GE, OVERFLOW_BITS)).or(sign);
        return h.blend(HalfFloats.FP16_NAN, magnitude.compare(VectorOperators.GT, 0x7F80_0000));
    }
}
