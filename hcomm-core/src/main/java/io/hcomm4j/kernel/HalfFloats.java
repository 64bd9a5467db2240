package io.hcomm4j.kernel;

/**
 * The scalar conversions between the 16-bit float formats and float32. Every FLOAT16/BFLOAT16 result goes through
 * {@link #toFp16} or {@link #toBf16}; the vector kernels reproduce these bit for bit.
 */
final class HalfFloats {
    /** The quiet NaN every FLOAT16 NaN result becomes, so results never depend on NaN propagation order. */
    static final short FP16_NAN = 0x7E00;
    /** The quiet NaN every BFLOAT16 NaN result becomes (the upper half of {@link Float#NaN}). */
    static final short BF16_NAN = 0x7FC0;

    private HalfFloats() {
    }

    static float fp16(short h) {
        return Float.float16ToFloat(h);
    }

    /** Rounds to nearest even (Float.floatToFloat16), NaN to {@link #FP16_NAN}. */
    static short toFp16(float f) {
        return f != f ? FP16_NAN : Float.floatToFloat16(f);
    }

    /** Exact: a bfloat16 is the upper half of a float32. */
    static float bf16(short h) {
        return Float.intBitsToFloat(h << 16);
    }

    /**
     * Rounds to nearest even, NaN to {@link #BF16_NAN}. Adding 0x7FFF plus the lowest kept bit carries into the kept
     * half exactly when the dropped half is above one half, or equal to it with an odd kept half; the carry out of
     * the largest finite values gives infinity, as rounding should.
     */
    static short toBf16(float f) {
        if (f != f) {
            return BF16_NAN;
        }
        int bits = Float.floatToRawIntBits(f);
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }
}
