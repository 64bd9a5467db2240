package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * FLOAT16 with the Vector API, bit-identical to {@link ScalarFp16Kernel}.
 *
 * <p>The Vector API of JDK 25 has no binary16 conversion ({@code VectorOperators} offers {@code S2F}, which converts
 * the short's integer value, and nothing like {@code F2HF}), so both directions are integer bit manipulation on int
 * lanes:
 * <ul>
 *   <li>widening is exact: normal values, infinities and NaNs re-bias the exponent, subnormals are their integer
 *       significand times 2<sup>-24</sup> (an exact float multiply that never sees a float subnormal);</li>
 *   <li>narrowing rounds to nearest even like {@link Float#floatToFloat16}: normal results by re-biasing plus a
 *       carry trick on the 13 dropped bits, subnormal results by one float addition of 0.5, which rounds the value to
 *       a multiple of 2<sup>-24</sup> in hardware; magnitudes from 65536 up become infinity, NaNs
 *       {@link HalfFloats#FP16_NAN}.</li>
 * </ul>
 * Unlike {@link VectorBf16Kernel}, this kernel widens shorts to ints by a lane conversion instead of working on two
 * elements per int lane: the conversions are about twice the code of bfloat16's, and a loop body that converts both
 * halves of every lane exceeds what C2 inlines into one compilation (it then stops inlining vector operations,
 * which box, and the kernel runs at scalar speed).
 */
final class VectorFp16Kernel extends AbstractKernel {
    private static final VectorSpecies<Integer> S = IntVector.SPECIES_PREFERRED;
    /** Shorts in half the bits: as many lanes as {@link #S}. */
    private static final VectorSpecies<Short> H =
            VectorSpecies.of(short.class, VectorShape.forBitSize(S.vectorBitSize() / 2));
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

    static void sum(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            FloatVector x = widen(ShortVector.fromMemorySegment(H, a, ao + d, NATIVE));
            FloatVector y = widen(ShortVector.fromMemorySegment(H, b, bo + d, NATIVE));
            narrow(x.add(y)).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarFp16Kernel.sum(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void prod(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            FloatVector x = widen(ShortVector.fromMemorySegment(H, a, ao + d, NATIVE));
            FloatVector y = widen(ShortVector.fromMemorySegment(H, b, bo + d, NATIVE));
            narrow(x.mul(y)).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarFp16Kernel.prod(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void min(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            FloatVector x = widen(ShortVector.fromMemorySegment(H, a, ao + d, NATIVE));
            FloatVector y = widen(ShortVector.fromMemorySegment(H, b, bo + d, NATIVE));
            narrow(x.min(y)).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarFp16Kernel.min(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    static void max(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long d = i << 1;
            FloatVector x = widen(ShortVector.fromMemorySegment(H, a, ao + d, NATIVE));
            FloatVector y = widen(ShortVector.fromMemorySegment(H, b, bo + d, NATIVE));
            narrow(x.max(y)).intoMemorySegment(o, oo + d, NATIVE);
        }
        long d = end << 1;
        ScalarFp16Kernel.max(a, ao + d, b, bo + d, o, oo + d, n - end);
    }

    @Override
    void divide(MemorySegment buf, long off, long n, int divisor) {
        float q = divisor;
        long end = S.loopBound(n);
        for (long i = 0; i < end; i += S.length()) {
            long p = off + (i << 1);
            narrow(widen(ShortVector.fromMemorySegment(H, buf, p, NATIVE)).div(q)).intoMemorySegment(buf, p, NATIVE);
        }
        ScalarFp16Kernel.divideBy(buf, off + (end << 1), n - end, divisor);
    }

    private static FloatVector widen(ShortVector h) {
        return widen((IntVector) h.convertShape(VectorOperators.ZERO_EXTEND_S2I, S, 0));
    }

    private static ShortVector narrow(FloatVector f) {
        return (ShortVector) narrowToInts(f).convertShape(VectorOperators.I2S, H, 0);
    }

    /**
     * binary16 bits (zero-extended, 0..0xFFFF) to float32, exactly as {@link Float#float16ToFloat} (NaN payloads
     * aside: they become canonical anyway). Subnormals go through an int-to-float conversion rather than a multiply
     * of the shifted bits by 2^112, which would feed float subnormals to the multiplier: x86 takes a slow microcode
     * assist for those, and small fp16 gradients are common.
     */
    static FloatVector widen(IntVector h) {
        IntVector magnitude = h.and(0x7FFF);
        IntVector normal = magnitude.lanewise(VectorOperators.LSHL, 13).add(REBIAS);
        // infinities and NaNs: exponent 31 must become 255, i.e. re-bias once more
        normal = normal.add(REBIAS, magnitude.compare(VectorOperators.GE, 0x7C00));
        FloatVector subnormal = ((FloatVector) magnitude.convert(VectorOperators.I2F, 0)).mul(0x1p-24f);
        IntVector bits = normal.blend(subnormal.reinterpretAsInts(), magnitude.compare(VectorOperators.LT, 0x0400));
        return bits.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
    }

    /** float32 to binary16 bits in the low 16 bits of each lane, as {@link HalfFloats#toFp16}. */
    static IntVector narrowToInts(FloatVector f) {
        IntVector bits = f.reinterpretAsInts();
        IntVector magnitude = bits.and(0x7FFF_FFFF);
        IntVector sign = bits.lanewise(VectorOperators.LSHR, 16).and(0x8000);
        // normal: re-bias, then add 0xFFF plus the lowest kept bit, which carries exactly when rounding up to even;
        // clamping at 65536 makes every larger magnitude come out as infinity (0x7C00)
        IntVector clamped = magnitude.min(OVERFLOW_BITS);
        IntVector normal = clamped.add(0xFFF - REBIAS)
                .add(clamped.lanewise(VectorOperators.LSHR, 13).and(1))
                .lanewise(VectorOperators.LSHR, 13);
        // subnormal (or zero): 0.5 + |f| rounds |f| to a multiple of 2^-24, the significand lands in the low bits
        IntVector subnormal = magnitude.reinterpretAsFloats().add(0.5f).reinterpretAsInts().sub(HALF_BITS);
        IntVector h = normal.blend(subnormal, magnitude.compare(VectorOperators.LT, MIN_NORMAL_BITS)).or(sign);
        return h.blend(HalfFloats.FP16_NAN, magnitude.compare(VectorOperators.GT, 0x7F80_0000));
    }
}
